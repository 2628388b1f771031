/**
 * Drop-in compatibility with Dappier's clients: the exact request shapes the Python SDK (0.3.x) and
 * the Go SDK / old docs send, and responses parsed the way they parse them (the Python SDK's models
 * make title, summary and source_url required strings on every result).
 */
import assert from "node:assert/strict";
import sharp from "sharp";
import { startServer } from "../../routes/server.ts";
import { bearer } from "../_helpers.ts";
import { hoursAgo, searchWorld } from "./_world.ts";

type W = Awaited<ReturnType<typeof searchWorld>>;

const OPTIONAL_STRINGS = ["author", "image_url", "preview_content", "pubdate", "site", "site_domain", "url"];

/** Parses one result as the Python SDK's pydantic model does: required strings, typed optionals. */
function parseResultLikePythonSdk(r: Record<string, unknown>) {
  for (const f of ["title", "summary", "source_url"]) {
    assert.equal(typeof r[f], "string", `${f} is a required string: ${JSON.stringify(r)}`);
  }
  for (const f of OPTIONAL_STRINGS) assert.ok(r[f] === undefined || typeof r[f] === "string", f);
  assert.ok(r.pubdate_unix === undefined || Number.isInteger(r.pubdate_unix));
  assert.ok(r.score === undefined || typeof r.score === "number");
}

async function seed(w: W, image?: string) {
  const r = await w.deps.search.ingest(w.dm, [
    {
      url: "https://alpha.example/dogs",
      title: "Shelter dogs find homes at the weekend fair",
      body: "Volunteers at the shelter matched forty dogs with new families at the weekend adoption fair.",
      pubdate: hoursAgo(w, 3),
      ...(image ? { image } : {}),
    },
    {
      // No summary, no author, no image: the required strings must still be there.
      url: "https://beta.example/cats",
      title: "Cat cafe opens downtown",
      body: "A cat cafe opened downtown.",
      pubdate: hoursAgo(w, 30),
    },
  ]);
  assert.equal(r.failed, 0);
}

Deno.test("Python SDK shape: datamodel_id in body and query, ref null, explicit search_algorithm", async () => {
  await using w = await searchWorld();
  await seed(w);
  // dappier-py: AIRecommendationsRequest(...).model_dump() posted to /app/v2/search?data_model_id=...
  const body = {
    datamodel_id: w.dm.id,
    query: "lifestyle articles about pets",
    similarity_top_k: 9,
    ref: null,
    num_articles_ref: 0,
    search_algorithm: "most_recent",
    page: 1,
    num_results: 10,
  };
  const res = await w.app.request(`/app/v2/search?data_model_id=${w.dm.id}`, {
    method: "POST",
    headers: { ...bearer(w.key), "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200);
  const json = await res.json();
  assert.equal(typeof json.status, "string");
  assert.equal(typeof json.response.query, "string");
  assert.equal(typeof json.response.message, "string");
  assert.ok(json.response.results.length >= 1);
  for (const r of json.response.results) parseResultLikePythonSdk(r);
});

Deno.test("legacy POST /app/datamodel/{dm_id}: the Go SDK's body, a bare {results}", async () => {
  await using w = await searchWorld();
  await seed(w);
  const goBody = `{
      "query": "shelter dogs",
      "similarity_top_k": 3,
      "ref": "",
      "num_articles_ref": 0,
      "search_algorithm": "most_recent",
      "page": 1,
      "num_results" : 10
  }`;
  const res = await w.app.request(`/app/datamodel/${w.dm.id}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${w.key}` },
    body: goBody,
  });
  assert.equal(res.status, 200);
  const json = await res.json();
  assert.deepEqual(Object.keys(json), ["results"]);
  assert.equal(json.results[0].title, "Shelter dogs find homes at the weekend fair");
  for (const r of json.results) parseResultLikePythonSdk(r);

  const v2 = await (await w.app.request(`/app/v2/search?data_model_id=${w.dm.id}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${w.key}` },
    body: goBody,
  })).json();
  assert.deepEqual(
    json.results.map((r: { url: string }) => r.url),
    v2.response.results.map((r: { url: string }) => r.url),
  );
});

Deno.test("legacy route: same auth and errors as /app/v2/search, and no other tenant's model", async () => {
  await using w = await searchWorld();
  const post = (path: string, body: unknown, key?: string) =>
    w.app.request(path, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key ? bearer(key) : {}) },
      body: JSON.stringify(body),
    });
  assert.equal((await post(`/app/datamodel/${w.dm.id}`, { query: "x" })).status, 401);
  assert.equal((await post(`/app/datamodel/${w.dm.id}`, { query: "x" }, "ak_unknown")).status, 403);
  const empty = await post(`/app/datamodel/${w.dm.id}`, { query: " " }, w.key);
  assert.equal(empty.status, 422);
  assert.equal((await empty.json()).message, "query: query cannot be empty");
  const badId = await post(`/app/datamodel/nope`, { query: "x" }, w.key);
  assert.equal(badId.status, 422);
  const other = await w.tenantWithKey("Other");
  const crossed = await post(`/app/datamodel/${w.dm.id}`, { query: "x" }, other.key);
  assert.equal(crossed.status, 404);
  assert.deepEqual(await crossed.json(), { message: "Data model not found" });
});

Deno.test("result images resize with ?width=&height= as well as &w=&h=", async () => {
  const photo = await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 10, g: 20, b: 30 } } })
    .jpeg().toBuffer();
  const origin = startServer(() => new Response(new Uint8Array(photo), { headers: { "content-type": "image/jpeg" } }));
  await using w = await searchWorld({ env: { ALLOW_PRIVATE_URLS: "true" } });
  try {
    await seed(w, `${origin.url}/photo.jpg`);
    const res = await w.app.request(`/app/datamodel/${w.dm.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer(w.key) },
      body: JSON.stringify({ query: "shelter dogs", similarity_top_k: 1 }),
    });
    const imageUrl = (await res.json()).results[0].image_url as string;
    const path = imageUrl.replace("http://svc.test", "");
    const size = async (suffix: string) => {
      const img = await w.app.request(`${path}${suffix}`, { headers: { accept: "image/jpeg" } });
      assert.equal(img.status, 200);
      const meta = await sharp(new Uint8Array(await img.arrayBuffer())).metadata();
      return [meta.width, meta.height];
    };
    assert.deepEqual(await size("&width=200&height=100"), [200, 100]);
    assert.deepEqual(await size("&w=120&h=90"), [120, 90]);
    assert.deepEqual(await size("&w=120&width=300"), [120, 90]);
    const bad = await w.app.request(`${path}&width=0`);
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
  } finally {
    await origin.shutdown();
  }
});
