import assert from "node:assert/strict";
import { AnalyticsDb } from "../../analytics/duckdb.ts";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture } from "./_fixture.ts";

Deno.test("AnalyticsDb.close() refuses new work and closes the instance only once the work under way is done", async () => {
  const db = await AnalyticsDb.open();
  const go = Promise.withResolvers<void>();
  const running = db.withConnection(async (conn) => {
    await go.promise;
    return (await conn.runAndReadAll("SELECT 42 AS answer")).getRowObjectsJS()[0]?.answer;
  });
  let closed = false;
  const closing = db.close().then(() => closed = true);
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(closed, false, "closed while a query was under way");
  await assert.rejects(db.withConnection((c) => c.runAndReadAll("SELECT 1")), /analytics database is closed/);
  assert.equal(await db.ping(), false);
  go.resolve();
  assert.equal(await running, 42);
  await closing;
  assert.equal(closed, true);
  await db.close(); // again: already closed
});

Deno.test("AnalyticsDb.lazy() creates its instance on the first connection, once for connections at once", async () => {
  const unused = AnalyticsDb.lazy();
  await unused.close(); // never opened: nothing to close
  await assert.rejects(unused.withConnection((c) => c.runAndReadAll("SELECT 1")), /analytics database is closed/);

  const db = AnalyticsDb.lazy({ threads: 1 });
  try {
    // Two first connections at once get one instance (made with the options given): a later
    // connection sees the tables both made.
    await Promise.all(["a", "b"].map((t) => db.withConnection((c) => c.run(`CREATE TABLE t_${t} AS SELECT 7 AS n`))));
    const rows = await db.withConnection(async (c) =>
      (await c.runAndReadAll(
        "SELECT (SELECT n FROM t_a) + (SELECT n FROM t_b) AS n, current_setting('threads') AS threads",
      )).getRowObjectsJS()
    );
    assert.deepEqual(rows, [{ n: 14, threads: 1n }]);
    assert.equal(await db.ping(), true);
  } finally {
    await db.close();
  }
  assert.equal(await db.ping(), false);
});

Deno.test("a dashboard stream whose client left keeps its queries to an open DuckDB until they finish", async () => {
  // Closing DuckDB under the panels' queries crashed the process (SIGSEGV) in about half the runs.
  for (let i = 0; i < 3; i++) {
    const world = await analyticsWorld();
    await loadFixture(world);
    for (const compare of ["previous_period", "previous_year"]) {
      const res = await world.w.app.request(`/v1/analytics/dashboard?compare=${compare}`, {
        headers: bearer(world.key),
      });
      assert.equal(res.status, 200);
      await res.body!.cancel();
    }
    await world.w.close();
  }
});
