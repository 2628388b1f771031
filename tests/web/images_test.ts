import assert from "node:assert/strict";
import sharp from "sharp";
import { ImageBusyError, ImageService } from "../../core/images/image_service.ts";
import { startServer } from "../../routes/server.ts";
import { createTestWorld } from "../_helpers.ts";

/** Serves generated images (and a few bad answers) on 127.0.0.1, counting hits per path. */
async function imageOrigin() {
  const photo = await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 30, g: 90, b: 160 } } })
    .jpeg().toBuffer();
  const logo = await sharp({
    create: { width: 200, height: 100, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } },
  })
    .png().toBuffer();
  const hits = new Map<string, number>();
  const server = startServer((req) => {
    const path = new URL(req.url).pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    switch (path) {
      case "/photo.jpg":
        return new Response(new Uint8Array(photo), { headers: { "content-type": "image/jpeg" } });
      case "/logo.png":
        return new Response(new Uint8Array(logo), { headers: { "content-type": "image/png" } });
      case "/page.html":
        return new Response("<html></html>", { headers: { "content-type": "text/html" } });
      case "/vector.svg":
        return new Response("<svg xmlns='http://www.w3.org/2000/svg'/>", {
          headers: { "content-type": "image/svg+xml" },
        });
      case "/broken.jpg":
        return new Response("not really a jpeg", { headers: { "content-type": "image/jpeg" } });
      default:
        return new Response("missing", { status: 404 });
    }
  });
  return { server, hits };
}

const WEBP = { accept: "image/avif,image/webp,image/apng,*/*;q=0.8" };
const LEGACY = { accept: "image/png,image/jpeg,*/*;q=0.8" };

async function dims(res: Response) {
  const meta = await sharp(new Uint8Array(await res.arrayBuffer())).metadata();
  return { format: meta.format, width: meta.width, height: meta.height };
}

Deno.test("GET /img resizes, negotiates webp and caches on disk", async (t) => {
  const { server, hits } = await imageOrigin();
  await using w = await createTestWorld({ env: { ALLOW_PRIVATE_URLS: "true" } });
  try {
    const photo = w.deps.links.imageUrl({ image: `${server.url}/photo.jpg` })!.replace("http://svc.test", "");
    const logo = w.deps.links.imageUrl({ image: `${server.url}/logo.png` })!.replace("http://svc.test", "");

    await t.step("w and h crop to exactly that box, as webp when accepted", async () => {
      const res = await w.app.request(`${photo}&w=320&h=180`, { headers: WEBP });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "image/webp");
      assert.equal(res.headers.get("cache-control"), "public, max-age=86400");
      assert.equal(res.headers.get("vary"), "Accept");
      assert.match(res.headers.get("etag") ?? "", /^"[0-9a-f]{64}"$/);
      assert.equal(res.headers.get("x-cache"), "MISS");
      assert.deepEqual(await dims(res), { format: "webp", width: 320, height: 180 });
    });
    await t.step("the same request is a disk cache hit; the origin is not asked again", async () => {
      const res = await w.app.request(`${photo}&w=320&h=180`, { headers: WEBP });
      assert.equal(res.headers.get("x-cache"), "HIT");
      assert.deepEqual(await dims(res), { format: "webp", width: 320, height: 180 });
      assert.equal(hits.get("/photo.jpg"), 1);
      const files = [...Deno.readDirSync(`${w.dataDir}/images/v`)].map((e) => e.name);
      assert.equal(files.length, 1);
      assert.match(files[0]!, /^[0-9a-f]{64}$/);
    });
    await t.step("other sizes reuse the cached origin bytes", async () => {
      const res = await w.app.request(`${photo}&w=400`, { headers: WEBP });
      assert.deepEqual(await dims(res), { format: "webp", width: 400, height: 300 });
      assert.equal(hits.get("/photo.jpg"), 1);
    });
    await t.step("without webp in Accept: JPEG for opaque images, PNG for transparent ones", async () => {
      assert.deepEqual(await dims(await w.app.request(`${photo}&w=160&h=160`, { headers: LEGACY })), {
        format: "jpeg",
        width: 160,
        height: 160,
      });
      const png = await w.app.request(`${logo}&h=50`, { headers: LEGACY });
      assert.equal(png.headers.get("content-type"), "image/png");
      assert.deepEqual(await dims(png), { format: "png", width: 100, height: 50 });
      const refused = await w.app.request(`${photo}&w=100`, { headers: { accept: "image/webp;q=0, image/jpeg" } });
      assert.equal(refused.headers.get("content-type"), "image/jpeg");
    });
    await t.step("fit=inside keeps the aspect ratio inside the box", async () => {
      const res = await w.app.request(`${photo}&w=320&h=320&fit=inside`, { headers: WEBP });
      assert.deepEqual(await dims(res), { format: "webp", width: 320, height: 240 });
    });
    await t.step("never enlarges past the original", async () => {
      assert.deepEqual(await dims(await w.app.request(`${photo}&w=1600`, { headers: WEBP })), {
        format: "webp",
        width: 800,
        height: 600,
      });
      assert.deepEqual(await dims(await w.app.request(photo, { headers: WEBP })), {
        format: "webp",
        width: 800,
        height: 600,
      });
    });
    await t.step("If-None-Match with the ETag answers 304", async () => {
      const first = await w.app.request(`${photo}&w=320&h=180`, { headers: WEBP });
      await first.body?.cancel();
      const res = await w.app.request(`${photo}&w=320&h=180`, {
        headers: { ...WEBP, "if-none-match": first.headers.get("etag")! },
      });
      assert.equal(res.status, 304);
      assert.equal(res.headers.get("etag"), first.headers.get("etag"));
    });
  } finally {
    await server.shutdown();
  }
});

Deno.test("GET /img rejects bad sizes with 400 and unknown references with 404", async (t) => {
  await using w = await createTestWorld({ env: { ALLOW_PRIVATE_URLS: "true" } });
  const ref = w.deps.links.imageUrl({ image: "http://127.0.0.1:9/photo.jpg" })!.replace("http://svc.test", "");
  for (
    const [query, field] of [["w=0", "w"], ["w=15", "w"], ["w=2049", "w"], ["w=abc", "w"], ["h=-5", "h"], [
      "h=1.5",
      "h",
    ], ["fit=stretch&w=20&h=20", "fit"]]
  ) {
    await t.step(`${query} is 400 naming ${field}`, async () => {
      const res = await w.app.request(`${ref}&${query}`);
      assert.equal(res.status, 400);
      const body = await res.json();
      assert.match(body.message, new RegExp(`^${field}: `));
    });
  }
  await t.step("missing src is 400", async () => {
    assert.equal((await w.app.request("/img?w=100")).status, 400);
  });
  await t.step("tampered, foreign-purpose and garbage references are 404", async () => {
    const src = new URL(`http://x${ref}`).searchParams.get("src")!;
    const click = new URL(w.deps.links.trackingUrl({ id: "ar_1", url: "https://a.example/", dataModelId: "dm_1" }, {}))
      .pathname
      .slice(3);
    const [kid, payload, tag] = src.split(".") as [string, string, string];
    const tampered = `${kid}.${payload}.${tag[0] === "A" ? "B" : "A"}${tag.slice(1)}`;
    for (const bad of [tampered, click, "nope", `${src}x`]) {
      const res = await w.app.request(`/img?src=${encodeURIComponent(bad)}&w=100`);
      assert.equal(res.status, 404, bad);
      assert.deepEqual(await res.json(), { message: "Image not found" });
    }
  });
});

Deno.test("GET /img answers 502 {message} when the origin fails or is not an image", async (t) => {
  const { server } = await imageOrigin();
  await using w = await createTestWorld({ env: { ALLOW_PRIVATE_URLS: "true" } });
  try {
    const cases: Record<string, RegExp> = {
      "/missing.jpg": /status 404/,
      "/page.html": /unsupported content type: text\/html/,
      "/vector.svg": /unsupported content type: image\/svg\+xml/,
      "/broken.jpg": /could not be decoded/,
    };
    for (const [path, message] of Object.entries(cases)) {
      await t.step(path, async () => {
        const ref = w.deps.links.imageUrl({ image: `${server.url}${path}` })!.replace("http://svc.test", "");
        const res = await w.app.request(`${ref}&w=100`);
        assert.equal(res.status, 502);
        assert.match((await res.json()).message, message);
      });
    }
  } finally {
    await server.shutdown();
  }
});

Deno.test("GET /img never fetches a loopback origin unless ALLOW_PRIVATE_URLS is set", async () => {
  const { server, hits } = await imageOrigin();
  await using w = await createTestWorld();
  try {
    const ref = w.deps.links.imageUrl({ image: `${server.url}/photo.jpg` })!.replace("http://svc.test", "");
    const res = await w.app.request(`${ref}&w=100`);
    assert.equal(res.status, 502);
    assert.deepEqual(await res.json(), { message: "image origin failed: URL points to a blocked address" });
    assert.equal(hits.size, 0);
  } finally {
    await server.shutdown();
  }
});

Deno.test("ImageService evicts least recently used files past IMAGE_CACHE_MAX_BYTES", async () => {
  const { server } = await imageOrigin();
  await using w = await createTestWorld({ env: { ALLOW_PRIVATE_URLS: "true", IMAGE_CACHE_MAX_BYTES: "30000" } });
  try {
    const photo = w.deps.links.imageUrl({ image: `${server.url}/photo.jpg` })!.replace("http://svc.test", "");
    for (const width of [100, 200, 300, 400, 500, 600]) {
      const res = await w.app.request(`${photo}&w=${width}`, { headers: LEGACY });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    let total = 0;
    for (const sub of ["v", "o"]) {
      for (const e of Deno.readDirSync(`${w.dataDir}/images/${sub}`)) {
        total += Deno.statSync(`${w.dataDir}/images/${sub}/${e.name}`).size;
      }
    }
    assert.ok(total <= 30000, `cache holds ${total} bytes`);
  } finally {
    await server.shutdown();
  }
});

Deno.test("ImageService sheds resize jobs past its queue with ImageBusyError (503 at the edge)", async () => {
  const { server } = await imageOrigin();
  await using w = await createTestWorld({ env: { ALLOW_PRIVATE_URLS: "true" } });
  const images = new ImageService({
    fetcher: w.deps.safeFetch,
    dataDir: w.dataDir,
    maxBytes: 1 << 20,
    maxDimension: 2048,
    cacheMaxBytes: 0,
    concurrency: 1,
    maxQueue: 1,
  });
  try {
    const src = `${server.url}/photo.jpg`;
    const results = await Promise.allSettled(
      [100, 200, 300, 400, 500, 600].map((width) => images.render({ src, width, webp: true })),
    );
    const busy = results.filter((r) => r.status === "rejected" && r.reason instanceof ImageBusyError);
    const ok = results.filter((r) => r.status === "fulfilled");
    assert.ok(busy.length > 0, "some jobs were shed");
    assert.ok(ok.length >= 2, "the running job and the queued one finished");
  } finally {
    await server.shutdown();
  }
});

Deno.test("attack: GET /img of many sizes of one image at once fetches its origin once", async () => {
  const { server, hits } = await imageOrigin();
  await using w = await createTestWorld({ env: { ALLOW_PRIVATE_URLS: "true" } });
  try {
    const photo = w.deps.links.imageUrl({ image: `${server.url}/photo.jpg` })!.replace("http://svc.test", "");
    // Each size is its own variant; none is cached yet. The origin must not see one fetch per size.
    const statuses = await Promise.all(Array.from({ length: 24 }, async (_, i) => {
      const res = await w.app.request(`${photo}&w=${100 + i}`, { headers: LEGACY });
      await res.body?.cancel();
      return res.status;
    }));
    assert.ok(statuses.every((s) => s === 200 || s === 503), statuses.join(","));
    assert.equal(hits.get("/photo.jpg"), 1);
  } finally {
    await server.shutdown();
  }
});

Deno.test("attack: GET /img renders at most IMAGE_RENDERS_PER_MIN_PER_ADDRESS new sizes a minute per address", async () => {
  const { server } = await imageOrigin();
  await using w = await createTestWorld({
    env: { ALLOW_PRIVATE_URLS: "true", IMAGE_RENDERS_PER_MIN_PER_ADDRESS: "4", TRUST_PROXY: "1" },
  });
  try {
    const photo = w.deps.links.imageUrl({ image: `${server.url}/photo.jpg` })!.replace("http://svc.test", "");
    const get = async (width: number, address: string) => {
      const res = await w.app.request(`${photo}&w=${width}`, { headers: { ...LEGACY, "x-forwarded-for": address } });
      return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.text() };
    };
    // One client walking through sizes: every new size is a resize and a cache file.
    const statuses = [];
    for (let width = 100; width < 110; width++) statuses.push((await get(width, "203.0.113.5")).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429, 429, 429, 429, 429]);
    const limited = await get(200, "203.0.113.5");
    assert.equal(limited.retryAfter, "60");
    assert.deepEqual(JSON.parse(limited.body), { message: "rate limit exceeded: too many requests from this address" });
    // A size already rendered costs nothing and is still served; another reader renders their own.
    assert.equal((await get(101, "203.0.113.5")).status, 200);
    assert.equal((await get(300, "203.0.113.6")).status, 200);
    w.clock.advance(60_000);
    assert.equal((await get(200, "203.0.113.5")).status, 200, "the next minute");
  } finally {
    await server.shutdown();
  }
});
