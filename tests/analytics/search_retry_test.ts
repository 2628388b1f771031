/**
 * A balancer's retry of `POST /app/v2/search` (docs/operations.md: HAProxy resends it to another
 * process after a response timeout) is one search: both attempts carry the same `X-Request-Id` (the
 * client's, or the one the balancer sets before the first attempt), and the search's `api_call`
 * and result impressions are recorded once per request. Distinct requests still count each.
 */
import assert from "node:assert/strict";
import { sqlString } from "../../analytics/sql_util.ts";
import { bearer } from "../_helpers.ts";
import { widgetWorld } from "../widget/_world.ts";

/** Stored events of `type`, per position (null for an api_call). */
async function stored(w: Awaited<ReturnType<typeof widgetWorld>>, type: string): Promise<(number | null)[]> {
  const dir = `${w.deps.config.dataDir.replace(/\/+$/, "")}/events`;
  return await w.deps.duckdb.withConnection(async (c) => {
    const r = await c.runAndReadAll(
      `SELECT position FROM read_parquet(${sqlString(`${dir}/*/*.parquet`)}, hive_partitioning = true)
       WHERE event_type = ${sqlString(type)} ORDER BY position`,
    );
    return r.getRowObjectsJS().map((row) => row.position === null ? null : Number(row.position));
  });
}

async function search(w: Awaited<ReturnType<typeof widgetWorld>>, key: string, dm: string, requestId?: string) {
  const res = await w.app.request(`/app/v2/search?data_model_id=${dm}`, {
    method: "POST",
    headers: {
      ...bearer(key),
      "content-type": "application/json",
      ...(requestId ? { "x-request-id": requestId } : {}),
    },
    body: JSON.stringify({ query: "council budget", num_results: 2, similarity_top_k: 2 }),
  });
  assert.equal(res.status, 200);
  const { response } = await res.json();
  assert.equal(response.results.length, 2);
}

Deno.test("POST /app/v2/search resent with the same X-Request-Id (a balancer's retry) records its api_call and impressions once", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  // HAProxy's unique-id, as the balancer sets it before the first attempt.
  const id = "7F000001:99C2_7F000001:48B1_6B08F1E5_0000:3C68";
  await search(w, a.key, a.dmNews, id);
  await search(w, a.key, a.dmNews, id);
  await w.deps.events.stop(); // hands in the buffered impressions and flushes the log
  assert.deepEqual(await stored(w, "api_call"), [null]);
  assert.deepEqual(await stored(w, "result_impression"), [1, 2]);
});

Deno.test("POST /app/v2/search: two requests asking the same are two searches", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  await search(w, a.key, a.dmNews, "req-one-1");
  await search(w, a.key, a.dmNews, "req-two-2");
  await search(w, a.key, a.dmNews);
  await search(w, a.key, a.dmNews);
  await w.deps.events.stop();
  assert.equal((await stored(w, "api_call")).length, 4);
  assert.deepEqual(await stored(w, "result_impression"), [1, 1, 1, 1, 2, 2, 2, 2]);
});

Deno.test("search: two searches of one request (an MCP batch) share its request id and are two searches", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const dm = (await w.deps.repos.dataModels.get(a.dmNews))!;
  for (let i = 0; i < 2; i++) {
    await w.deps.search.recommend(dm, { query: "council budget", num_results: 2, similarity_top_k: 2 }, {
      tenantId: a.tenantId,
      caller: "mcp",
      requestId: "one-http-request",
    });
  }
  await w.deps.events.stop();
  assert.equal((await stored(w, "api_call")).length, 2);
});

/** A caller's signal that aborts as the search is made (the caller left while it ran). */
function leavingDuringSearch(w: Awaited<ReturnType<typeof widgetWorld>>): AbortController {
  const leave = new AbortController();
  const recommend = w.deps.search.recommend.bind(w.deps.search);
  w.deps.search.recommend = (...args) => {
    leave.abort();
    return recommend(...args);
  };
  return leave;
}

for (
  const [name, path] of [
    [
      "POST /app/v2/search: a caller who left before the results came back records its api_call, no result impressions",
      (dm: string) => `/app/v2/search?data_model_id=${dm}`,
    ],
    [
      "legacy POST /app/datamodel/{dm_id}: a caller who left before the results came back records its api_call, no result impressions",
      (dm: string) => `/app/datamodel/${dm}`,
    ],
  ] as const
) {
  Deno.test(name, async () => {
    await using w = await widgetWorld();
    const a = await w.tenant("Acme");
    // The caller leaves while the search is made.
    const leave = leavingDuringSearch(w);
    const res = await w.app.request(path(a.dmNews), {
      method: "POST",
      headers: { ...bearer(a.key), "content-type": "application/json" },
      body: JSON.stringify({ query: "council budget", num_results: 2, similarity_top_k: 2 }),
      signal: leave.signal,
    });
    await res.body?.cancel();
    await w.deps.events.stop();
    assert.deepEqual(await stored(w, "api_call"), [null]);
    assert.deepEqual(await stored(w, "result_impression"), [], "its results were shown to nobody");
  });
}
