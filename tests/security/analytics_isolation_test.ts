import assert from "node:assert/strict";
import { bearer, within } from "../_helpers.ts";
import { startServer } from "../../routes/server.ts";
import { analyticsWorld, loadFixture, loadGeneratedDays, parseCsv } from "../analytics/_fixture.ts";

/** Queries that differ only in tenant, filters, zone or comparison (and so must never share an answer). */
const VARIANTS = [
  "ask-ai?start_date=2026-11-16&end_date=2026-11-22",
  "ask-ai?start_date=2026-11-16&end_date=2026-11-22&compare=previous_period",
  "ask-ai?start_date=2026-11-16&end_date=2026-11-22&compare=previous_year",
  "ask-ai?start_date=2026-11-16&end_date=2026-11-22&compare=previous_period&timezone=Pacific/Kiritimati",
  "ask-ai?start_date=2026-11-16&end_date=2026-11-22&compare=previous_period&placement_id=pl_1",
  "ask-ai?start_date=2026-11-23&end_date=2026-11-29&compare=previous_period",
  "ask-ai/breakdown?dimension=placement_id&start_date=2026-11-16&end_date=2026-11-22",
  "ask-ai/breakdown?dimension=placement_id&start_date=2026-11-16&end_date=2026-11-22&compare=previous_period",
  "ask-ai/breakdown?dimension=date&interval=hour&start_date=2026-11-20&end_date=2026-11-21&timezone=America/New_York",
  "ask-ai/breakdown?dimension=date&interval=hour&start_date=2026-11-20&end_date=2026-11-21&timezone=Asia/Tokyo",
  "ask-ai/logs?start_date=2026-11-16&end_date=2026-11-22",
  "ask-ai/logs?start_date=2026-11-16&end_date=2026-11-22&timezone=Pacific/Kiritimati",
  "session-intelligence?start_date=2026-11-16&end_date=2026-11-22",
  "sponsored-conversations?start_date=2026-11-16&end_date=2026-11-22",
  "articles?start_date=2026-11-16&end_date=2026-11-22",
  "agents?start_date=2026-11-16&end_date=2026-11-22",
];

Deno.test("analytics cache and compare memo: no tenant, filter, zone or comparison ever gets another's answer", async () => {
  // The same requests against a world without cache or memo give the reference answers.
  await using plain = await analyticsWorld({ ANALYTICS_CACHE_TTL_S: "0", ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  await loadFixture(plain);
  await using cached = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  await loadFixture(cached);
  const ask = async (world: typeof plain, key: string, path: string) => {
    const res = await world.w.app.request(`/v1/analytics/${path}`, { headers: bearer(key) });
    assert.equal(res.status, 200, path);
    return { status: res.headers.get("x-cache"), body: await res.json() };
  };
  // Each variant twice per tenant, tenants interleaved, so every entry one request filled is
  // offered to the others. The uncached world's answer to a tenant and variant is the reference for
  // both rounds (nothing changes in between: the clock and the data stand still).
  const reference = new Map<string, Awaited<ReturnType<typeof ask>>>();
  for (let round = 0; round < 2; round++) {
    for (const path of VARIANTS) {
      for (const who of ["key", "other"] as const) {
        const key = who === "key" ? cached.key : cached.other.key;
        const got = await ask(cached, key, path);
        let want = reference.get(`${who} ${path}`);
        if (!want) {
          want = await ask(plain, who === "key" ? plain.key : plain.other.key, path);
          reference.set(`${who} ${path}`, want);
        }
        assert.equal(got.status, round === 0 ? "MISS" : "HIT", `${who} ${path} round ${round}`);
        assert.deepEqual(got.body, want.body, `${who} ${path} round ${round}`);
      }
    }
  }
});

/** The export scratch files (`export-*`) left in a scratch folder. */
async function exportScratch(scratch: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(scratch)) if (e.name.startsWith("export-")) names.push(e.name);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return names;
}

Deno.test("logs export: a client that leaves mid-download leaves no scratch file, no error, and the next export is whole", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  // 14,587 log rows (3.5 MB of CSV, six batches of two days). The export reads queries only, so only
  // the generated days' queries are written: an eighth of the rows, the same export byte for byte.
  await loadGeneratedDays(world, {
    from: "2026-11-01",
    to: "2026-11-12",
    events: 12_000,
    seed: 5,
    keep: (row) => row.event_type === "query",
  });
  const server = startServer(world.w.app.fetch, { log: world.w.log });
  const scratch = `${world.w.deps.analytics.eventsDir}/.tmp`;
  const exports = () => exportScratch(scratch);
  const drained = async () => {
    while ((await exports()).length > 0 || server.inFlight > 0) await new Promise((r) => setTimeout(r, 50));
  };
  try {
    const url = (format: string) =>
      `${server.url}/v1/analytics/ask-ai/logs?start_date=2026-11-01&end_date=2026-11-12&format=${format}`;
    const whole = await fetch(url("csv"), { headers: bearer(world.key) });
    const rows = parseCsv(await whole.text()).length;
    assert.ok(rows > 10_000, `${rows} rows`);
    for (const format of ["csv", "parquet"]) {
      // Leave after the first piece, and before reading anything.
      for (const read of [1, 0]) {
        const ac = new AbortController();
        const res = await fetch(url(format), { headers: bearer(world.key), signal: ac.signal });
        assert.equal(res.status, 200);
        if (read) await res.body!.getReader().read();
        ac.abort();
        await within(drained(), 30_000, () => `scratch left after a ${format} download was abandoned`);
      }
      // The client leaves before the answer starts.
      const early = new AbortController();
      const pending = fetch(url(format), { headers: bearer(world.key), signal: early.signal }).catch(() => null);
      early.abort();
      await pending;
      await within(drained(), 30_000, () => `scratch left after a ${format} request was abandoned`);
    }
    const again = await fetch(url("csv"), { headers: bearer(world.key) });
    assert.equal(parseCsv(await again.text()).length, rows);
    const errors = world.w.log.lines.filter((l) => l.level === "error");
    assert.deepEqual(errors, []);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a Parquet logs export under way, or a HEAD of any export, never breaks other analytics queries nor leaves scratch", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  await loadFixture(world);
  const app = world.w.app;
  const scratch = `${world.w.deps.analytics.eventsDir}/.tmp`;
  const leftovers = () => exportScratch(scratch);
  const rollups = async () => {
    // Every rollup reads the events view; `no-cache` makes each one run its SQL now.
    for (const path of ["ask-ai", "ask-ai/breakdown?dimension=date", "articles", "agents", "realtime"]) {
      const res = await app.request(`/v1/analytics/${path}`, {
        headers: { ...bearer(world.key), "cache-control": "no-cache" },
      });
      const text = await res.text();
      assert.equal(res.status, 200, `${path}: ${text}`);
    }
    // Another tenant too: the events view is shared by every tenant.
    const other = await app.request("/v1/analytics/ask-ai", {
      headers: { ...bearer(world.other.key), "cache-control": "no-cache" },
    });
    assert.equal(other.status, 200);
    await other.body?.cancel();
  };
  // A download in progress: its file exists until the client has read it.
  const slow = await app.request("/v1/analytics/ask-ai/logs?format=parquet", { headers: bearer(world.key) });
  assert.equal(slow.status, 200);
  await rollups();
  await slow.body!.cancel();
  // HEAD answers the export's headers and starts no export.
  for (const format of ["parquet", "csv"]) {
    const head = await app.request(`/v1/analytics/ask-ai/logs?format=${format}`, {
      method: "HEAD",
      headers: bearer(world.key),
    });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-disposition"), `attachment; filename="ask-ai-logs.${format}"`);
    assert.equal(head.body, null);
    const bad = await app.request(`/v1/analytics/ask-ai/logs?format=${format}&timezone=Nowhere/Else`, {
      method: "HEAD",
      headers: bearer(world.key),
    });
    assert.equal(bad.status, 400);
  }
  const dashboard = await app.request("/v1/analytics/dashboard", { method: "HEAD", headers: bearer(world.key) });
  assert.equal(dashboard.status, 200);
  assert.equal(dashboard.body, null);
  assert.deepEqual(await leftovers(), []);
  await rollups();
});

Deno.test("every analytics answer, export and error is served with X-Content-Type-Options: nosniff", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  await loadFixture(world);
  for (
    const [path, key] of [
      ["ask-ai", world.key],
      ["ask-ai/logs?format=csv", world.key],
      ["ask-ai/logs?format=parquet", world.key],
      ["ask-ai/breakdown?dimension=placement_id&format=csv", world.key],
      ["dashboard", world.key],
      ["realtime?timezone=Nowhere/Else", world.key],
      ["no-such-route", world.key],
      ["ask-ai", `ak_${"x".repeat(43)}`],
      ["ask-ai", ""],
    ] as const
  ) {
    const res = await world.w.app.request(`/v1/analytics/${path}`, { headers: key ? bearer(key) : {} });
    assert.equal(res.headers.get("x-content-type-options"), "nosniff", `${path} ${res.status}`);
    await res.body?.cancel();
  }
});

Deno.test("logs exports: a tenant runs two at once; a third is 429 until one ends, other tenants are not held up", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  await loadFixture(world);
  const url = (format: string) =>
    `/v1/analytics/ask-ai/logs?start_date=2026-11-16&end_date=2026-11-22&format=${format}`;
  const start = (format: string, key = world.key) => world.w.app.request(url(format), { headers: bearer(key) });
  const csv = await start("csv");
  const parquet = await start("parquet");
  assert.equal(csv.status, 200);
  assert.equal(parquet.status, 200);
  // Both still under way (their clients have not read them): the tenant's third waits.
  const third = await start("csv");
  assert.equal(third.status, 429);
  assert.deepEqual(await third.json(), { message: "rate limit exceeded" });
  assert.ok(Number(third.headers.get("retry-after")) > 0);
  // The JSON page, a HEAD of an export and another tenant's export are not exports under way.
  const page = await world.w.app.request(url("json"), { headers: bearer(world.key) });
  assert.equal(page.status, 200);
  await page.body?.cancel();
  const head = await world.w.app.request(url("csv"), { method: "HEAD", headers: bearer(world.key) });
  assert.equal(head.status, 200);
  const other = await start("csv", world.other.key);
  assert.equal(other.status, 200);
  await other.text();
  // Read to its end: its slot is free again (the other is still held).
  const rows = parseCsv(await csv.text()).length;
  assert.ok(rows > 1, `${rows} rows`);
  const next = await start("csv");
  assert.equal(next.status, 200);
  const refused = await start("parquet");
  assert.equal(refused.status, 429);
  await refused.body?.cancel();
  // Abandoned by its client: free again too.
  await parquet.body!.cancel();
  const last = await start("parquet");
  assert.equal(last.status, 200);
  await last.arrayBuffer();
  assert.equal(parseCsv(await next.text()).length, rows);
});
