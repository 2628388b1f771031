import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../core/config.ts";
import type { DataModel } from "../../core/store/models.ts";
import { crc32, parseSearchShard, serves, shardOf } from "../../core/search/index/shard.ts";
import { AppError } from "../../core/errors.ts";
import { SearchEngine } from "../../core/search/engine.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { httpStatus } from "../../routes/error_status.ts";

Deno.test("crc32() is IEEE CRC-32, and shardOf() agrees with HAProxy's crc32,mod(n) (+1)", () => {
  assert.equal(crc32("123456789"), 0xcbf43926);
  // Values HAProxy 2.6 printed for `url_param(data_model_id),crc32` and `,mod(4)`.
  assert.equal(crc32("dm_01m8bftczm5zg2xjb2s5v4trh7"), 338653352);
  assert.equal(shardOf("dm_01m8bftczm5zg2xjb2s5v4trh7", 4), 1);
  assert.equal(shardOf("dm_abc", 4), 4);
  assert.equal(shardOf("dm_01m8bftczmph5eq76gjt435b03", 4), 2);
});

Deno.test("parseSearchShard(): i/n and/or data model ids; anything else is refused without echoing it", () => {
  assert.equal(parseSearchShard(undefined), null);
  const s = parseSearchShard("2/4, dm_abc")!;
  assert.deepEqual(s.hash, { index: 2, count: 4 });
  assert.ok(s.listed.has("dm_abc"));
  assert.equal(s.label, "2/4,dm_abc");
  assert.equal(serves(s, "dm_abc"), true, "listed ids are served whatever their hash");
  assert.equal(serves(s, "dm_01m8bftczmph5eq76gjt435b03"), true, "hash shard 2 of 4");
  assert.equal(serves(s, "dm_01m8bftczm5zg2xjb2s5v4trh7"), false, "hash shard 1 of 4");
  assert.equal(serves(null, "dm_anything"), true, "unsharded serves all");
  for (const bad of ["0/4", "5/4", "1/0", "1/2,2/2", "<script>", "dm_", "2/4,,"]) {
    assert.throws(() => parseConfig({ SEARCH_SHARD: bad }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, /^Invalid configuration: SEARCH_SHARD must be/);
      assert.ok(!err.message.includes("<script>"));
      return true;
    });
  }
});

async function shardWorld(shard: string) {
  const w = await createTestWorld({ env: { SEARCH_SHARD: shard } });
  const { tenantId, key } = await w.tenantWithKey();
  for (const id of ["dm_served1", "dm_colocated2", "dm_elsewhere3"]) {
    await w.deps.repos.dataModels.create(
      {
        id,
        tenantId,
        name: id,
        sites: [{ domain: "alpha.example", name: "Alpha" }],
        marketplace: false,
        createdAt: w.clock.now().toISOString(),
      } satisfies DataModel,
    );
  }
  return Object.assign(w, { key });
}

Deno.test("SEARCH_SHARD: a data model of another shard is 421 JSON on search and ingest, 503 for the balancer", async () => {
  await using w = await shardWorld("dm_served1,dm_colocated2");
  const headers = { ...bearer(w.key), "content-type": "application/json" };
  const ingest = (dm: string) =>
    w.app.request(`/v1/data-models/${dm}/articles`, {
      method: "POST",
      headers,
      body: JSON.stringify([{ url: `https://alpha.example/${dm}`, title: "Harbour reopens", body: "Ships sail." }]),
    });
  let res = await ingest("dm_served1");
  assert.equal(res.status, 200);
  await res.body?.cancel();

  res = await ingest("dm_elsewhere3");
  assert.equal(res.status, 421);
  assert.equal(res.headers.get("shard-miss"), "listed");
  const body = await res.json();
  assert.equal(body.error, "misdirected_request");
  assert.equal(body.shard, "listed", "the listed ids (maybe other tenants') are not told, before authentication");
  assert.ok(!JSON.stringify(body).includes("dm_served1"));
  assert.match(body.message, /does not serve that data model/);

  const search = (dm: string, extra: Record<string, string> = {}) =>
    w.app.request(`/app/v2/search?data_model_id=${dm}`, {
      method: "POST",
      headers: { ...headers, ...extra },
      body: JSON.stringify({ query: "harbour" }),
    });
  res = await search("dm_served1");
  assert.equal(res.status, 200);
  assert.equal((await res.json()).articles?.length ?? 1, 1);
  res = await search("dm_elsewhere3");
  assert.equal(res.status, 421, "never an empty result from an index this process does not hold");
  await res.body?.cancel();
  // The balancer's form: the same body as 503, which HAProxy's retry-on retries on another server.
  res = await search("dm_elsewhere3", { "x-shard-retry": "1" });
  assert.equal(res.status, 503);
  assert.equal(res.headers.get("shard-miss"), "listed");
  assert.equal((await res.json()).error, "misdirected_request");
  // A malformed id is the route's own validation error, not a shard miss.
  res = await search("not-an-id");
  assert.notEqual(res.status, 421);
  await res.body?.cancel();
});

Deno.test("SEARCH_SHARD: answers over co-located data models work; one outside the shard is refused, not dropped", async () => {
  await using w = await shardWorld("dm_served1,dm_colocated2");
  const engine = w.deps.search;
  await engine.ingest((await w.deps.repos.dataModels.get("dm_served1"))!, [
    { url: "https://alpha.example/a", title: "Harbour reopens after storm", body: "The harbour reopened." },
  ]);
  await engine.ingest((await w.deps.repos.dataModels.get("dm_colocated2"))!, [
    { url: "https://alpha.example/b", title: "Storm closes the harbour road", body: "The road is shut." },
  ]);
  const both = await engine.retrieve(["dm_served1", "dm_colocated2"], "harbour storm", { k: 5 });
  assert.deepEqual(new Set(both.map((r) => r.dataModelId)), new Set(["dm_served1", "dm_colocated2"]));
  await assert.rejects(
    () => engine.retrieve(["dm_served1", "dm_elsewhere3"], "harbour storm"),
    (err: unknown) => err instanceof AppError && httpStatus(err) === 421 && err.code === "misdirected_request",
  );
  assert.equal(engine.serves?.("dm_elsewhere3"), false);
});

Deno.test("SEARCH_SHARD: start() builds only the shard's indexes", async () => {
  await using w = await shardWorld("dm_served1,dm_colocated2");
  const writer = w.deps.search as SearchEngine;
  for (const id of ["dm_served1", "dm_colocated2"]) {
    await writer.ingest((await w.deps.repos.dataModels.get(id))!, [
      { url: `https://alpha.example/${id}`, title: "Harbour reopens", body: "Ships sail again." },
    ]);
  }
  // Another process on the same KV, told to serve one of the two.
  const engine = new SearchEngine({
    kv: w.deps.kv,
    clock: w.clock,
    log: w.log,
    embeddings: writer.embeddings,
    shard: parseSearchShard("dm_served1"),
  });
  await engine.start();
  assert.equal(engine.registry.followStats("dm_served1").builds, 1);
  assert.equal(engine.registry.followStats("dm_colocated2").builds, 0, "not built, not followed");
  await engine.close();
});

Deno.test("SEARCH_SHARD: a path whose percent-encoding does not decode is the route's 422, not a 500", async () => {
  await using w = await shardWorld("dm_served1");
  const headers = { ...bearer(w.key), "content-type": "application/json" };
  for (const path of ["/v1/data-models/%E0%A4%A/articles", "/v1/data-models/dm_%ZZ/sources"]) {
    const res = await w.app.request(path, { method: "POST", headers, body: "[]" });
    assert.equal(res.status, 422, path);
    const body = await res.json();
    assert.match(body.message, /^data_model_id: must be dm_/);
    assert.ok(!JSON.stringify(body).includes("%"), "the raw id is not echoed");
  }
  assert.ok(!w.log.lines.some((l) => l.level === "error"), "nothing logged as an unexpected error");
});

Deno.test("SEARCH_SHARD: a /v1/data-models path names its data model whatever the query says, as HAProxy routes it", async () => {
  await using w = await shardWorld("dm_served1");
  const get = (path: string) => w.app.request(path, { headers: bearer(w.key) });
  // HAProxy sends this by its path to dm_served1's shard; a stray data_model_id must not refuse it there.
  let res = await get("/v1/data-models/dm_served1/categories?data_model_id=dm_elsewhere3");
  assert.equal(res.status, 200);
  assert.equal((await res.json()).data_model_id, "dm_served1");
  // And the query cannot walk a request for another shard's data model past the edge check.
  res = await get("/v1/data-models/dm_elsewhere3/sources?data_model_id=dm_served1");
  assert.equal(res.status, 421);
  assert.equal((await res.json()).error, "misdirected_request");
});
