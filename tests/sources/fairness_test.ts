import assert from "node:assert/strict";
import { newId } from "../../core/ids.ts";
import type { SafeFetcher } from "../../core/net/safe_fetch.ts";
import type { DataModel } from "../../core/store/models.ts";
import { feedServer, LONG, rss, xml } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";

/**
 * Two data models: `heavy` with three sources, `light` with one. The heavy one is the data model
 * whose sources come first in the poller's worklist (KV order), the position where it would hold
 * every round if rounds went source by source.
 */
async function twoTenants() {
  const feed = feedServer();
  const w = await sourcesWorld();
  const other = await w.deps.repos.dataModels.create(
    {
      id: newId("dm", w.clock),
      tenantId: w.tenantId,
      name: "Other",
      sites: [{ domain: "delta.example", name: "Delta" }],
      marketplace: false,
      createdAt: w.clock.now().toISOString(),
    } satisfies DataModel,
  );
  const [heavy, light] = [w.dm, other].sort((a, b) => (a.id < b.id ? -1 : 1)) as [DataModel, DataModel];
  const add = (dm: DataModel, path: string) => {
    feed.route(path, () => xml(rss([{ link: feed.url(`${path}/a`), title: `Story of ${path}`, content: LONG("x") }])));
    return w.repo.add({
      dataModelId: dm.id,
      tenantId: w.tenantId,
      type: "rss",
      url: feed.url(path),
      intervalS: 300,
      fetchPages: false,
    }, 20);
  };
  // Equally due, a data model's sources are polled in the worklist's order (by id).
  const heavySources = [await add(heavy, "/h1"), await add(heavy, "/h2"), await add(heavy, "/h3")]
    .sort((a, b) => (a.id < b.id ? -1 : 1));
  const lightSource = await add(light, "/l1");
  return {
    w,
    heavySources,
    lightSource,
    async [Symbol.asyncDispose]() {
      await w.close();
      await feed[Symbol.asyncDispose]();
    },
  };
}

Deno.test("poller: a data model with many sources takes turns with the others, one poll per data model per pass", async () => {
  await using t = await twoTenants();
  const polled = (await t.w.poller().tick()).map((o) => o.sourceId);
  const [h1, h2, h3] = t.heavySources.map((s) => s.id);
  assert.deepEqual(polled, [h1, t.lightSource.id, h2, h3], "the light data model is polled after one heavy poll");
});

Deno.test("poller: a round that has run past the tick starts no new pass; the rest waits for the next round", async () => {
  await using t = await twoTenants();
  const real = t.w.deps.safeFetch;
  // Every fetch takes two ticks of the (injected) clock: slow sources.
  const slow = {
    fetch: (url: string, options: Parameters<SafeFetcher["fetch"]>[1]) => {
      t.w.clock.advance(2_000);
      return real.fetch(url, options);
    },
  } as unknown as SafeFetcher;
  const p = t.w.poller({ fetcher: slow });
  const [h1, h2, h3] = t.heavySources.map((s) => s.id);
  assert.deepEqual((await p.tick()).map((o) => o.sourceId), [h1, t.lightSource.id]);
  assert.deepEqual((await p.tick()).map((o) => o.sourceId), [h2], "one pass: the heavy model's next source");
  assert.deepEqual((await p.tick()).map((o) => o.sourceId), [h3]);
});
