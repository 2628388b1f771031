import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { createTestWorld } from "../_helpers.ts";
import { LOADER_CACHE } from "../../routes/widget/assets.ts";
import { IMMUTABLE } from "../../routes/analytics/dashboard/assets.ts";
import { bundlerCached } from "../../tools/bundler.ts";

const LOADER_BUDGET = 4 * 1024;
const WIDGET_BUDGET = 40 * 1024;

const gz = { "accept-encoding": "gzip, br" };
/** The gzip body's size and its text. */
async function unzip(res: Response): Promise<{ bytes: number; body: string }> {
  const gzip = new Uint8Array(await res.arrayBuffer());
  return { bytes: gzip.length, body: new TextDecoder().decode(gunzipSync(gzip)) };
}

Deno.test("GET /widget/v1/loader.js: gzip within 4 KB, short cache with ETag, names the hashed widget script", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/widget/v1/loader.js", { headers: gz });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-encoding"), "gzip");
  assert.match(res.headers.get("content-type")!, /^text\/javascript/);
  assert.equal(res.headers.get("cache-control"), LOADER_CACHE);
  assert.equal(res.headers.get("cross-origin-resource-policy"), "cross-origin");
  const etag = res.headers.get("etag")!;
  const { bytes, body } = await unzip(res);
  assert.ok(bytes > 0 && bytes <= LOADER_BUDGET, `loader is ${bytes} bytes gzip`);
  assert.match(body, /\/widget\/v1\/assets\/widget\.[0-9a-f]{16}\.js/);
  assert.ok(!body.includes("__ASK_AI_WIDGET_PATH__"));

  const again = await w.app.request("/widget/v1/loader.js", { headers: { ...gz, "if-none-match": etag } });
  assert.equal(again.status, 304);
  const plain = await w.app.request("/widget/v1/loader.js");
  assert.equal(plain.headers.get("content-encoding"), null);
  assert.equal(await plain.text(), body);
});

Deno.test("GET /widget/v1/assets/widget.<hash>.js: immutable, gzip within 40 KB; another name is 404", async () => {
  await using w = await createTestWorld();
  const loader = await (await w.app.request("/widget/v1/loader.js")).text();
  const path = loader.match(/\/widget\/v1\/assets\/widget\.[0-9a-f]{16}\.js/)![0];
  const res = await w.app.request(path, { headers: gz });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("cache-control"), IMMUTABLE);
  const { bytes, body } = await unzip(res);
  assert.ok(bytes > 0 && bytes <= WIDGET_BUDGET, `widget is ${bytes} bytes gzip`);
  assert.match(body, /ask-ai-widget/);
  assert.equal((await w.app.request(path, { headers: { "if-none-match": res.headers.get("etag")! } })).status, 304);

  for (const other of ["widget.0000000000000000.js", "..%2Floader.js", "loader.js"]) {
    const miss = await w.app.request(`/widget/v1/assets/${other}`);
    assert.equal(miss.status, 404, other);
    assert.ok(!(await miss.text()).includes(other), "the 404 does not echo the name");
  }
});

Deno.test("widget scripts name no third-party origin and read no cookie or localStorage", async () => {
  for (const file of ["loader.js", "widget.js"]) {
    const src = await Deno.readTextFile(new URL(`../../widget/dist/${file}`, import.meta.url));
    assert.doesNotMatch(src, /https?:\/\//, `${file} has no absolute URL: it talks to the origin it came from`);
    assert.doesNotMatch(src, /document\.cookie|localStorage/, `${file} keeps no identifier beyond sessionStorage`);
  }
});

Deno.test({
  name: "widget/dist is the build of widget/src (deno task widget:build --check)",
  async fn() {
    assert.ok(
      await bundlerCached(),
      "Deno's bundler is not cached: run the suite with deno task test, which caches it",
    );
    const cmd = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", "--allow-write", "--allow-run", "--allow-env", "widget/build.ts", "--check"],
      cwd: new URL("../../", import.meta.url).pathname,
      stdout: "piped",
      stderr: "piped",
    });
    const out = await cmd.output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  },
});

Deno.test("the widget's script routes are in the OpenAPI document under the widget tag", async () => {
  await using w = await createTestWorld();
  const doc = await (await w.app.request("/openapi.json")).json();
  for (const path of ["/widget/v1/loader.js", "/widget/v1/assets/{name}"]) {
    assert.deepEqual(doc.paths[path]?.get?.tags, ["widget"], path);
  }
});
