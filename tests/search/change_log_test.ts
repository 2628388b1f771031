import assert from "node:assert/strict";
import { SearchEngine } from "../../core/search/engine.ts";
import type { DataModel } from "../../core/store/models.ts";
import { engineOf, within } from "../_helpers.ts";
import { kvThrough } from "../_kv_proxy.ts";
import { hoursAgo, searchWorld } from "./_world.ts";

type W = Awaited<ReturnType<typeof searchWorld>>;

/**
 * Two processes on one KV file: each has its own KV handle and its own engine (index, writer id),
 * as two servers behind a balancer do.
 */
async function twoProcesses(w: W) {
  const dir = await Deno.makeTempDir({ prefix: "svc-changelog-" });
  const path = `${dir}/kv.sqlite3`;
  const kvA = await Deno.openKv(path), kvB = await Deno.openKv(path);
  const engine = (kv: Deno.Kv) =>
    new SearchEngine({ kv, clock: w.clock, log: w.log, embeddings: engineOf(w.deps).embeddings });
  const a = engine(kvA), b = engine(kvB);
  return {
    a,
    b,
    async [Symbol.asyncDispose]() {
      await a.close();
      await b.close();
      kvA.close();
      kvB.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const titles = async (e: SearchEngine, dm: DataModel, query: string) =>
  (await e.recommend(dm, { query, similarity_top_k: 9 }, { tenantId: dm.tenantId })).response.results.map((r) =>
    r.title
  );

Deno.test("change log: a write in one process is applied in another without rebuilding it", async (t) => {
  await using w = await searchWorld();
  await using p = await twoProcesses(w);
  await p.a.ingest(w.dm, [{ url: "https://alpha.example/tram", title: "Tram line opens downtown" }]);
  assert.equal(await p.b.count(w.dm.id), 1);
  assert.equal(p.b.registry.followStats(w.dm.id).builds, 1);

  await t.step("a new article in A becomes searchable in B", async () => {
    await p.a.ingest(w.dm, [{ url: "https://beta.example/ferry", title: "Ferry strike ends after talks" }]);
    assert.equal(await p.b.registry.applyChanges(w.dm.id), 1);
    assert.deepEqual(await titles(p.b, w.dm, "ferry strike"), ["Ferry strike ends after talks"]);
    assert.equal(await p.b.count(w.dm.id), 2);
  });

  await t.step("an edit in A replaces the article in B: new words found, old ones forgotten", async () => {
    await p.a.ingest(w.dm, [{ url: "https://beta.example/ferry", title: "Harbour pilots return to work" }]);
    assert.equal(await p.b.registry.applyChanges(w.dm.id), 1);
    assert.deepEqual(await titles(p.b, w.dm, "harbour pilots"), ["Harbour pilots return to work"]);
    assert.ok(!(await titles(p.b, w.dm, "ferry strike")).includes("Ferry strike ends after talks"));
    assert.equal(await p.b.count(w.dm.id), 2);
  });

  await t.step("a retention deletion in A leaves B's results", async () => {
    await p.a.ingest(w.dm, [
      { url: "https://gamma.example/old", title: "Old bridge closure notice", pubdate: hoursAgo(w, 24 * 40) },
    ]);
    await p.b.registry.applyChanges(w.dm.id);
    assert.ok((await titles(p.b, w.dm, "bridge closure")).includes("Old bridge closure notice"));
    const cutoff = Math.floor(w.clock.now().getTime() / 1000) - 30 * 86_400;
    assert.equal(await p.a.expire(w.dm.id, cutoff), 1);
    assert.equal(await p.b.registry.applyChanges(w.dm.id), 1);
    assert.ok(!(await titles(p.b, w.dm, "bridge closure")).includes("Old bridge closure notice"));
    assert.equal(await p.b.count(w.dm.id), 2);
  });

  await t.step("B never rebuilt; A applied none of its own changes", async () => {
    assert.deepEqual(p.b.registry.followStats(w.dm.id), { builds: 1, changesApplied: 4, position: 5 });
    assert.equal(await p.a.registry.applyChanges(w.dm.id), 0);
    assert.equal(p.a.registry.followStats(w.dm.id).builds, 1);
    assert.equal(p.a.registry.followStats(w.dm.id).changesApplied, 0);
  });
});

Deno.test("change log: watch() applies another process's writes on its own timer", async () => {
  await using w = await searchWorld();
  await using p = await twoProcesses(w);
  await p.b.ingest(w.dm, [{ url: "https://alpha.example/one", title: "Library opens late" }]);
  const applied = p.b.registry.nextApplied(w.dm.id);
  p.b.watch({ intervalMs: 20 });
  await p.a.ingest(w.dm, [{ url: "https://beta.example/two", title: "Bridge repairs begin" }]);
  await within(applied, 10_000, "B applies A's change");
  assert.deepEqual(await titles(p.b, w.dm, "bridge repairs"), ["Bridge repairs begin"]);
  assert.equal(p.b.registry.followStats(w.dm.id).builds, 1);
});

Deno.test("change log: concurrent writers get dense, ordered entries and both indexes agree", async () => {
  await using w = await searchWorld();
  // Two engines on one KV handle (two handles of one SQLite file in one process lock each other
  // out under concurrent commits; across processes and on KV Connect they serialise).
  const engine = () =>
    new SearchEngine({ kv: w.deps.kv, clock: w.clock, log: w.log, embeddings: engineOf(w.deps).embeddings });
  const a = engine(), b = engine();
  const batch = (site: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ url: `https://${site}/s${i}`, title: `Story ${i} from ${site}` }));
  // 45 articles each: three commits of up to 20, racing on the same log head.
  const reports = await Promise.all([
    a.ingest(w.dm, batch("alpha.example", 45)),
    b.ingest(w.dm, batch("beta.example", 45)),
  ]);
  assert.deepEqual(reports.map((r) => r.created), [45, 45]);
  const seqs: number[] = [];
  for await (const e of w.deps.kv.list({ prefix: ["article_change", w.dm.id] })) seqs.push(e.key[2] as number);
  assert.deepEqual(seqs, Array.from({ length: 90 }, (_, i) => i + 1));
  assert.equal(await a.registry.applyChanges(w.dm.id), 45);
  assert.equal(await b.registry.applyChanges(w.dm.id), 45);
  assert.equal(await a.count(w.dm.id), 90);
  assert.equal(await b.count(w.dm.id), 90);
  assert.equal(a.registry.followStats(w.dm.id).builds + b.registry.followStats(w.dm.id).builds, 2);
});

Deno.test("change log: a process whose position was trimmed away rebuilds once, then follows again", async () => {
  await using w = await searchWorld();
  await using p = await twoProcesses(w);
  await p.a.ingest(w.dm, [{ url: "https://alpha.example/a", title: "Council approves budget" }]);
  assert.equal(await p.b.count(w.dm.id), 1);
  await p.a.ingest(w.dm, [{ url: "https://alpha.example/b", title: "Snow closes mountain pass" }]);
  // Everything but the newest entry is trimmed: B's position (1) is no longer followed by entry 2.
  const trimmed = await p.a.articles.changes.trim(w.dm.id, w.clock.now().getTime(), {
    maxAgeMs: 3_600_000,
    maxEntries: 0,
  });
  assert.equal(trimmed, 2);
  const rebuilt = p.b.registry.nextRebuild(w.dm.id);
  await p.b.registry.applyChanges(w.dm.id);
  await within(rebuilt, 1000, "B rebuilds");
  assert.equal(p.b.registry.followStats(w.dm.id).builds, 2);
  assert.deepEqual(await titles(p.b, w.dm, "mountain pass"), ["Snow closes mountain pass"]);
  await p.a.ingest(w.dm, [{ url: "https://alpha.example/c", title: "Orchestra tours abroad" }]);
  assert.equal(await p.b.registry.applyChanges(w.dm.id), 1);
  assert.equal(p.b.registry.followStats(w.dm.id).builds, 2);
});

Deno.test("change log: trim keeps young entries and the newest maxEntries", async () => {
  await using w = await searchWorld();
  const e = engineOf(w.deps);
  for (let i = 0; i < 3; i++) await e.ingest(w.dm, [{ url: `https://alpha.example/${i}`, title: `Item ${i}` }]);
  const now = w.clock.now().getTime();
  assert.equal(await e.articles.changes.trim(w.dm.id, now, { maxAgeMs: 60_000, maxEntries: 10 }), 0);
  assert.equal(await e.articles.changes.trim(w.dm.id, now, { maxAgeMs: 60_000, maxEntries: 1 }), 2);
  assert.equal(await e.articles.changes.trim(w.dm.id, now + 120_000, { maxAgeMs: 60_000, maxEntries: 10 }), 1);
  assert.equal(await e.trimChanges(w.dm.id), 0);
});

/** `kv` whose atomic commits after the first `winning` ones all lose their race (as against a busy writer elsewhere). */
function losingRaces(kv: Deno.Kv) {
  const state = { winning: Infinity, commits: 0 };
  const wrapped = kvThrough(kv, {
    atomic: () => ({
      commit: (real) => state.commits >= state.winning ? Promise.resolve({ ok: false }) : (state.commits++, real()),
    }),
  });
  return { kv: wrapped, state };
}

Deno.test("change log: an ingest whose later commits lose every race reports and indexes the articles it did store", async () => {
  await using w = await searchWorld();
  const racing = losingRaces(w.deps.kv);
  const a = new SearchEngine({ kv: racing.kv, clock: w.clock, log: w.log, embeddings: engineOf(w.deps).embeddings });
  const b = new SearchEngine({ kv: w.deps.kv, clock: w.clock, log: w.log, embeddings: engineOf(w.deps).embeddings });
  try {
    assert.equal(await a.count(w.dm.id), 0);
    assert.equal(await b.count(w.dm.id), 0);
    // 60 new URLs: the first commit holds 48 of them; every commit after it loses (another process writes).
    const items = Array.from({ length: 60 }, (_, i) => ({ url: `https://alpha.example/s${i}`, title: `Story ${i}` }));
    racing.state.winning = racing.state.commits + 1;
    const report = await a.ingest(w.dm, items);
    let stored = 0;
    for await (const _ of w.deps.kv.list({ prefix: ["article", w.dm.id] })) stored++;
    assert.equal(stored, 48, "the first commit went through");
    assert.equal(report.created, stored, "what was stored is reported stored");
    assert.equal(report.failed, 60 - stored);
    assert.equal(await b.registry.applyChanges(w.dm.id), stored);
    assert.equal(await a.count(w.dm.id), stored, "the writer's own index holds what it stored, as the other's does");
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test("retention expire(): a delete that loses its races part way leaves the rest to the next sweep, in KV and in the index alike", async () => {
  await using w = await searchWorld();
  const racing = losingRaces(w.deps.kv);
  const a = new SearchEngine({ kv: racing.kv, clock: w.clock, log: w.log, embeddings: engineOf(w.deps).embeddings });
  try {
    const old = Array.from({ length: 12 }, (_, i) => ({
      url: `https://alpha.example/old${i}`,
      title: `Old story ${i}`,
      pubdate: hoursAgo(w, 40 * 24),
    }));
    assert.equal((await a.ingest(w.dm, old)).created, 12);
    const cutoff = Math.floor(w.clock.now().getTime() / 1000) - 30 * 86_400;
    // Deletes commit five at a time: the first commit goes through, every later one loses (another writer).
    racing.state.winning = racing.state.commits + 1;
    await assert.rejects(a.expire(w.dm.id, cutoff));
    let inKv = 0;
    for await (const _ of w.deps.kv.list({ prefix: ["article", w.dm.id] })) inKv++;
    assert.equal(inKv, 7, "five deleted from KV");
    assert.equal(await a.count(w.dm.id), 12, "the index still holds them, so the next sweep can find them");
    // The races are over: the next sweep deletes what is left, and the index follows.
    racing.state.winning = Infinity;
    assert.equal(await a.expire(w.dm.id, cutoff), 12);
    inKv = 0;
    for await (const _ of w.deps.kv.list({ prefix: ["article", w.dm.id] })) inKv++;
    assert.equal(inKv, 0);
    assert.equal(await a.count(w.dm.id), 0);
  } finally {
    await a.close();
  }
});
