import assert from "node:assert/strict";
import { VisitCube } from "../../analytics/visit_cube.ts";
import { KvLease } from "../../core/kv_lease.ts";
import { analyticsWorld, loadGeneratedDays } from "../analytics/_fixture.ts";

Deno.test("visit figures: two processes' passes on one KV and events folder build each closed day once", async () => {
  await using world = await analyticsWorld();
  await loadGeneratedDays(world, { from: "2026-11-15", to: "2026-11-20", events: 60, seed: 29 });
  await world.w.deps.events.flush();
  const { deps } = world.w;
  const dir = `${world.w.dataDir}/derived/visits`;
  // Two processes' cubes: one KV, one events folder, one figures folder, each its own lease owner.
  const cube = (owner: string) =>
    new VisitCube({
      engine: deps.analytics,
      clock: deps.clock,
      log: deps.log,
      dir,
      lease: new KvLease({ kv: deps.kv, clock: deps.clock, key: ["visit_cube_lease"], owner, ttlMs: 60_000 }),
    });
  const [a, b] = await Promise.all([cube("p1").buildClosedDays(), cube("p2").buildClosedDays()]);
  assert.equal(a + b, 6, "six closed days, each built by one pass");
  assert.ok(a === 0 || b === 0, "one pass ran, the other found the lease taken");
  // The next pass (the lease was given up) finds every day built and writes nothing.
  assert.equal(await cube("p2").buildClosedDays(), 0);
  for await (const d of Deno.readDir(dir)) {
    if (!d.name.startsWith("date=")) continue;
    const files = (await Array.fromAsync(Deno.readDir(`${dir}/${d.name}`))).filter((f) => f.name.endsWith(".parquet"));
    assert.equal(files.length, 1, d.name);
  }
});
