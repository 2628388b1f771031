import assert from "node:assert/strict";
import sharp from "sharp";
import type { SafeFetchOptions, SafeFetchResult } from "../../core/net/safe_fetch.ts";
import { demoCover, isDemoImageUrl, withDemoImages } from "../../fixtures/demo_images.ts";

const IMAGES: SafeFetchOptions = { accept: ["image/jpeg", "image/png", "image/webp"] };

Deno.test("demoCover(): a 640 x 360 PNG that libvips decodes, the same for a name, another for another name", async () => {
  const a = demoCover("/images/port-strike.jpg");
  const meta = await sharp(a).metadata();
  assert.deepEqual([meta.format, meta.width, meta.height, meta.channels], ["png", 640, 360, 3]);
  assert.deepEqual(demoCover("/images/port-strike.jpg"), a);
  const other = await sharp(demoCover("/images/council-budget.jpg")).raw().toBuffer();
  assert.notDeepEqual(other, await sharp(a).raw().toBuffer());
});

Deno.test("withDemoImages(): draws only https images of .example hosts; every other URL goes to the guarded fetcher", async () => {
  const passed: string[] = [];
  const inner = {
    fetch(url: string): Promise<SafeFetchResult> {
      passed.push(url);
      return Promise.reject(new Error("the guarded fetcher"));
    },
  };
  const fetcher = withDemoImages(inner);
  const drawn = await fetcher.fetch("https://dailyledger.example/images/port-strike.jpg", IMAGES);
  assert.equal(drawn.status, 200);
  assert.equal(drawn.contentType, "image/png");
  assert.deepEqual(drawn.body, demoCover("/images/port-strike.jpg"));
  assert.deepEqual(passed, []);
  const elsewhere = [
    "https://news.example.com/images/a.jpg", // a real domain ending in example.com
    "http://dailyledger.example/images/a.jpg",
    "https://dailyledger.example/local/a-story",
    "https://dailyledger.example:8443/images/a.jpg",
    "https://user:pw@dailyledger.example/images/a.jpg",
    "https://127.0.0.1/images/a.jpg",
    "not a url",
  ];
  for (const url of elsewhere) {
    assert.equal(isDemoImageUrl(url), false, url);
    await assert.rejects(fetcher.fetch(url, IMAGES), /guarded fetcher/);
  }
  // A caller that does not read images gets what the guarded fetcher says.
  await assert.rejects(
    fetcher.fetch("https://dailyledger.example/images/a.jpg", { accept: ["text/html"] }),
    /guarded fetcher/,
  );
  assert.equal(passed.length, elsewhere.length + 1);
});
