import assert from "node:assert/strict";
import { AppError } from "../../core/errors.ts";
import { newId } from "../../core/ids.ts";
import { bearer, engineOf } from "../_helpers.ts";
import { hoursAgo, search, searchWorld } from "./_world.ts";
import { httpStatus } from "../../routes/error_status.ts";

async function seeded(env: Record<string, string> = {}) {
  const w = await searchWorld({ env });
  const report = await w.deps.search.ingest(w.dm, [
    {
      url: "https://alpha.example/rates",
      title: "Central bank holds interest rates steady",
      body: "The central bank kept interest rates unchanged as inflation cooled. Mortgage holders are relieved.",
      pubdate: hoursAgo(w, 30),
      author: "Ann Walker",
      image: "https://alpha.example/img/rates.jpg",
    },
    {
      url: "https://beta.example/storm",
      title: "Coastal storm floods the harbour",
      body: "Heavy rain and a storm surge flooded streets near the harbour. Residents were evacuated overnight.",
      pubdate: hoursAgo(w, 5),
    },
  ]);
  assert.equal(report.created, 2);
  return w;
}

Deno.test("POST /app/v2/search returns every SearchResult field for a matching article", async () => {
  await using w = await seeded();
  const r = await search(w, { query: "interest rates" });
  assert.equal(r.status, 200);
  assert.equal(r.json.status, "success");
  assert.equal(r.json.response.query, "interest rates");
  assert.match(r.json.response.message, /semantic/);
  const top = r.json.response.results[0];
  assert.equal(top.url, "https://alpha.example/rates");
  assert.equal(top.title, "Central bank holds interest rates steady");
  assert.equal(top.author, "Ann Walker");
  assert.equal(top.site, "Alpha News");
  assert.equal(top.site_domain, "alpha.example");
  assert.equal(top.pubdate, hoursAgo(w, 30).replace(/\.\d+Z$/, ".000Z"));
  assert.equal(top.pubdate_unix, Math.floor(Date.parse(hoursAgo(w, 30)) / 1000));
  assert.equal(typeof top.score, "number");
  assert.ok(top.summary.length > 0);
  assert.ok(top.preview_content.length > 0);
  // source_url is the signed tracking redirect; image_url the signed resizing endpoint.
  assert.match(top.source_url, /^http:\/\/svc\.test\/r\/[\w.-]+$/);
  assert.match(top.image_url, /^http:\/\/svc\.test\/img\?src=/);
  const click = await w.app.request(top.source_url.replace("http://svc.test", ""));
  assert.equal(click.status, 302);
  assert.equal(click.headers.get("location"), "https://alpha.example/rates");
  // An article without an image has no image_url.
  const storm = (await search(w, { query: "coastal storm" })).json.response.results[0];
  assert.equal(storm.url, "https://beta.example/storm");
  assert.equal(storm.image_url, undefined);
});

Deno.test("POST /app/v2/search without a bearer key is 401, with an unknown key 403", async () => {
  await using w = await seeded();
  const none = await w.app.request(`/app/v2/search?data_model_id=${w.dm.id}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query: "x" }),
  });
  assert.equal(none.status, 401);
  assert.ok((await none.json()).message);
  const bad = await search(w, { query: "x" }, { key: "ak_unknownunknownunknownunknownunknown000000" });
  assert.equal(bad.status, 403);
});

Deno.test("POST /app/v2/search without data_model_id is 400 text/plain", async () => {
  await using w = await seeded();
  const res = await w.app.request("/app/v2/search", {
    method: "POST",
    headers: { ...bearer(w.key), "content-type": "application/json" },
    body: JSON.stringify({ query: "x" }),
  });
  assert.equal(res.status, 400);
  assert.match(res.headers.get("content-type")!, /^text\/plain/);
  assert.equal(await res.text(), "data_model_id is required");
});

Deno.test("POST /app/v2/search with an unknown or another tenant's data model is 404 {message}", async () => {
  await using w = await seeded();
  const unknown = await search(w, { query: "x" }, { dmId: "dm_0000000000000000000000000" });
  assert.equal(unknown.status, 404);
  assert.deepEqual(unknown.json, { message: "Data model not found" }, "the id is not echoed");
  const other = await w.tenantWithKey("Other Media");
  const theirs = await w.deps.repos.dataModels.create({
    id: newId("dm", w.clock),
    tenantId: other.tenantId,
    name: "Theirs",
    sites: [],
    marketplace: false,
    createdAt: w.clock.now().toISOString(),
  });
  const cross = await search(w, { query: "x" }, { dmId: theirs.id });
  assert.equal(cross.status, 404);
  // The owner can use it.
  assert.equal((await search(w, { query: "x" }, { dmId: theirs.id, key: other.key })).status, 200);
});

Deno.test("POST /app/v2/search answers 422 {message} naming the field for bad bodies", async (t) => {
  await using w = await seeded();
  const cases: [string, unknown, RegExp][] = [
    ["empty query", { query: "" }, /^query: query cannot be empty$/],
    ["blank query", { query: "   " }, /^query: query cannot be empty$/],
    ["missing query", { similarity_top_k: 3 }, /^query: must be a string$/],
    ["query of the wrong type", { query: 5 }, /^query: /],
    ["similarity_top_k as a string", { query: "x", similarity_top_k: "9" }, /^similarity_top_k: /],
    ["similarity_top_k of 0", { query: "x", similarity_top_k: 0 }, /^similarity_top_k: /],
    ["fractional page", { query: "x", page: 1.5 }, /^page: /],
    ["page 0", { query: "x", page: 0 }, /^page: /],
    ["num_results over the maximum", { query: "x", num_results: 1001 }, /^num_results: /],
    ["negative num_articles_ref", { query: "x", num_articles_ref: -1 }, /^num_articles_ref: /],
    ["unknown algorithm", { query: "x", search_algorithm: "random" }, /^search_algorithm: /],
    ["ref of the wrong type", { query: "x", ref: 7 }, /^ref: /],
  ];
  for (const [name, body, message] of cases) {
    await t.step(name, async () => {
      const r = await search(w, body);
      assert.equal(r.status, 422, r.text);
      assert.match(r.json.message, message);
    });
  }
});

Deno.test('POST /app/v2/search accepts unknown fields, ref null and ref ""', async () => {
  await using w = await seeded();
  for (
    const body of [
      { query: "storm", sdk_version: "2.1", extra: { nested: true } },
      { query: "storm", ref: null, num_articles_ref: 2 },
      { query: "storm", ref: "", num_articles_ref: 2 },
    ]
  ) {
    const r = await search(w, body);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.response.results[0].url, "https://beta.example/storm");
  }
});

Deno.test("POST /app/v2/search with malformed JSON is 400 and a wrong content type 415", async () => {
  await using w = await seeded();
  const res = await w.app.request(`/app/v2/search?data_model_id=${w.dm.id}`, {
    method: "POST",
    headers: { ...bearer(w.key), "content-type": "application/json" },
    body: "{nope",
  });
  assert.equal(res.status, 400);
  const res2 = await w.app.request(`/app/v2/search?data_model_id=${w.dm.id}`, {
    method: "POST",
    headers: { ...bearer(w.key), "content-type": "text/plain" },
    body: JSON.stringify({ query: "x" }),
  });
  assert.equal(res2.status, 415);
});

Deno.test("a search engine without a URL analyzer answers URL queries 422 naming the limitation", async () => {
  await using w = await seeded();
  const { SearchEngine } = await import("../../core/search/engine.ts");
  const bare = new SearchEngine({
    kv: w.deps.kv,
    clock: w.clock,
    log: w.log,
    embeddings: engineOf(w.deps).embeddings,
  });
  await assert.rejects(
    bare.recommend(w.dm, { query: "https://news.example.com/some-article" }, {}),
    (e) => e instanceof AppError && httpStatus(e) === 422 && /URL analysis is unavailable/.test(e.message),
  );
});

Deno.test("POST /app/v2/search with a URL query fetches and analyses the page, and leaves it out", async () => {
  const page = `<!doctype html><html><head><title>Storm surge floods the old harbour</title></head><body>
    <article><h1>Storm surge floods the old harbour</h1>
    <p>A powerful coastal storm pushed a surge of seawater into the old harbour overnight, flooding streets.</p>
    <p>Residents of low-lying neighbourhoods were evacuated as heavy rain continued and the flooding spread.</p>
    <p>Emergency crews said the storm would weaken by the afternoon, but warned of more flooding at high tide.</p>
    </article></body></html>`;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } }),
  );
  try {
    await using w = await seeded({ ALLOW_PRIVATE_URLS: "true" });
    const pageUrl = `http://127.0.0.1:${server.addr.port}/news/storm`;
    // The page is also an article of the model: it must not recommend itself.
    await w.deps.search.ingest(w.dm, [{ url: pageUrl, title: "Storm surge floods the old harbour" }]);
    const r = await search(w, { query: pageUrl, similarity_top_k: 2 });
    assert.equal(r.status, 200, r.text);
    const urls = r.json.response.results.map((x: { url: string }) => x.url);
    assert.ok(!urls.includes(pageUrl));
    assert.equal(urls[0], "https://beta.example/storm");
    assert.match(
      r.json.response.message,
      /^Analysed http:\/\/127\.0\.0\.1:\d+\/news\/storm \("Storm surge floods the old harbour"\)/,
    );
    // Without ALLOW_PRIVATE_URLS a loopback URL is refused by the SSRF guard.
    await using strict = await seeded();
    const refused = await search(strict, { query: pageUrl });
    assert.equal(refused.status, 422);
    assert.match(refused.json.message, /^query: the URL could not be analysed/);
  } finally {
    await server.shutdown();
  }
});

Deno.test("POST /app/v2/search on a data model without articles is 200 with no results", async () => {
  await using w = await searchWorld();
  const r = await search(w, { query: "anything" });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.response.results, []);
});

Deno.test("GET /openapi.json documents POST /app/v2/search and the article upsert", async () => {
  await using w = await searchWorld();
  const doc = await (await w.app.request("/openapi.json")).json();
  assert.ok(doc.paths["/app/v2/search"].post);
  assert.ok(doc.paths["/v1/data-models/{data_model_id}/articles"].post);
});

Deno.test("POST /app/v2/search, /app/datamodel and /app/aimodel share a per-key rate limit: 429 {message} with Retry-After", async () => {
  await using w = await searchWorld({ env: { SEARCH_RATE_LIMIT_PER_MIN: "3" } });
  const ok = await search(w, { query: "bridge" });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.headers.get("x-ratelimit-limit"), "3");
  assert.equal(ok.headers.get("x-ratelimit-remaining"), "2");
  const post = (path: string, key = w.key) =>
    w.app.request(path, {
      method: "POST",
      headers: { ...bearer(key), "content-type": "application/json" },
      body: JSON.stringify({ query: "bridge" }),
    });
  assert.equal((await post(`/app/datamodel/${w.dm.id}`)).status, 200);
  // A real-time call counts in the same bucket (its own 404 here: the model does not exist).
  assert.equal((await post(`/app/aimodel/am_${"0".repeat(26)}`)).status, 404);
  for (const path of [`/app/v2/search?data_model_id=${w.dm.id}`, `/app/datamodel/${w.dm.id}`, `/app/aimodel/am_x1`]) {
    const limited = await post(path);
    assert.equal(limited.status, 429, path);
    assert.deepEqual(await limited.json(), { message: "rate limit exceeded" });
    assert.ok(Number(limited.headers.get("retry-after")) > 0);
  }
  // Another key has its own bucket; the next minute the first key searches again.
  const other = await w.tenantWithKey("Other Media");
  assert.equal((await post(`/app/datamodel/${w.dm.id}`, other.key)).status, 404);
  w.clock.advance(60_000);
  assert.equal((await search(w, { query: "bridge" })).status, 200);
});

Deno.test("GET /v1/data-models/{id}/article and /categories count in the key's search rate limit: 429 {message}", async () => {
  await using w = await searchWorld({ env: { SEARCH_RATE_LIMIT_PER_MIN: "2" } });
  const get = (path: string) => w.app.request(`/v1/data-models/${w.dm.id}${path}`, { headers: bearer(w.key) });
  assert.equal((await get("/categories")).status, 200);
  assert.equal((await get(`/article?url=${encodeURIComponent("https://alpha.example/none")}`)).status, 404);
  for (const path of ["/categories", `/article?url=${encodeURIComponent("https://alpha.example/none")}`]) {
    const limited = await get(path);
    assert.equal(limited.status, 429, path);
    assert.deepEqual(await limited.json(), { message: "rate limit exceeded" });
  }
  assert.equal((await search(w, { query: "bridge" })).status, 429);
});
