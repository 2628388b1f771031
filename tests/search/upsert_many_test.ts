import assert from "node:assert/strict";
import { engineOf } from "../_helpers.ts";
import { searchWorld } from "./_world.ts";

Deno.test("ingest of many articles: batched commits keep ids of known URLs and create the rest", async () => {
  await using w = await searchWorld();
  const item = (i: number, title: string) => ({ url: `https://alpha.example/n/${i}`, title, body: `Story ${i}.` });
  const first = await w.deps.search.ingest(w.dm, Array.from({ length: 10 }, (_, i) => item(i * 5, `Early ${i}`)));
  assert.equal(first.created, 10);
  const ids = new Map(first.results.map((r) => [r.url, r.id]));
  // 50 items over three commits of 20: every fifth URL is known.
  const report = await w.deps.search.ingest(w.dm, Array.from({ length: 50 }, (_, i) => item(i, `Late ${i}`)));
  assert.equal(report.created, 40);
  assert.equal(report.updated, 10);
  for (const r of report.results) {
    if (ids.has(r.url)) assert.equal(r.id, ids.get(r.url), "a known URL keeps its id");
  }
  assert.equal(await w.deps.search.count(w.dm.id), 50);
  const stored = await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://alpha.example/n/45");
  assert.equal(stored!.title, "Late 45");
});
