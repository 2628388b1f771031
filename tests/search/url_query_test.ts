import assert from "node:assert/strict";
import { AppError } from "../../core/errors.ts";
import type { AnalyzedPage, LinkBuilder, LinkContext, UrlAnalyzer } from "../../core/search/ports.ts";
import { newId } from "../../core/ids.ts";
import type { DepsOverrides } from "../../composition.ts";
import { hoursAgo, search, searchWorld } from "./_world.ts";

/** A test analyzer that knows pages by URL (the real one fetches and extracts them). */
class KnownPagesAnalyzer implements UrlAnalyzer {
  seen: string[] = [];
  constructor(private readonly pages: Record<string, AnalyzedPage>) {}
  analyze(url: string): Promise<AnalyzedPage> {
    this.seen.push(url);
    const p = this.pages[url];
    if (!p) {
      return Promise.reject(new AppError("unprocessable", "url_unreadable", "query: the page could not be fetched"));
    }
    return Promise.resolve(p);
  }
}

async function world(overrides: DepsOverrides = {}) {
  const w = await searchWorld({ overrides });
  await w.deps.search.ingest(w.dm, [
    {
      url: "https://alpha.example/storm-1",
      title: "Coastal storm floods the harbour",
      body: "A storm surge flooded the harbour and residents were evacuated.",
      pubdate: hoursAgo(w, 3),
    },
    {
      url: "https://beta.example/storm-2",
      title: "Storm clean-up begins along the coast",
      body: "Volunteers cleared debris after the coastal storm and flooding.",
      pubdate: hoursAgo(w, 2),
    },
    {
      url: "https://gamma.example/cup",
      title: "Club wins the cup final",
      body: "A late goal decided the cup final.",
      pubdate: hoursAgo(w, 1),
    },
  ]);
  return w;
}

Deno.test("a URL query is analysed, recommended by its content, and the page itself is excluded", async () => {
  const analyzer = new KnownPagesAnalyzer({
    "https://alpha.example/short/s1": {
      url: "https://alpha.example/storm-1", // where the short link redirected
      title: "Coastal storm floods the harbour",
      text: "A storm surge flooded the harbour and residents were evacuated from the coast.",
      summary: "A coastal storm flooded the harbour.",
    },
  });
  await using w = await world({ urlAnalyzer: analyzer });
  const r = await search(w, { query: "https://alpha.example/short/s1", similarity_top_k: 2 });
  assert.equal(r.status, 200);
  const urls = r.json.response.results.map((x: { url: string }) => x.url);
  assert.ok(!urls.includes("https://alpha.example/storm-1"));
  assert.equal(urls[0], "https://beta.example/storm-2");
  assert.equal(r.json.response.query, "https://alpha.example/short/s1");
  assert.match(
    r.json.response.message,
    /^Analysed https:\/\/alpha\.example\/short\/s1 \("Coastal storm floods the harbour"\)/,
  );
  assert.deepEqual(analyzer.seen, ["https://alpha.example/short/s1"]);
});

Deno.test("a URL the analyzer cannot read answers its 422 message", async () => {
  await using w = await world({ urlAnalyzer: new KnownPagesAnalyzer({}) });
  const r = await search(w, { query: "https://nowhere.example/x" });
  assert.equal(r.status, 422);
  assert.equal(r.json.message, "query: the page could not be fetched");
});

Deno.test("source_url and image_url come from the wired LinkBuilder with the result's context", async () => {
  const seen: LinkContext[] = [];
  const links: LinkBuilder = {
    trackingUrl: (a, ctx) => {
      seen.push(ctx);
      return `http://svc.test/r/${a.id}`;
    },
    imageUrl: (a) => (a.image ? `http://svc.test/images/${encodeURIComponent(a.image)}` : undefined),
  };
  await using w = await world({ linkBuilder: links });
  const r = await search(w, { query: "storm", similarity_top_k: 2 });
  const res = r.json.response.results;
  assert.match(res[0].source_url, /^http:\/\/svc\.test\/r\/ar_/);
  assert.equal(res[0].image_url, undefined); // these articles have no image
  assert.deepEqual(seen.map((s) => s.position), [1, 2]);
  assert.equal(seen[0]!.dataModelId, w.dm.id);
  assert.equal(seen[0]!.tenantId, w.tenantId);
});

Deno.test("retrieve() returns hybrid, recency-weighted articles with bodies across data models", async () => {
  await using w = await world();
  const hits = await w.deps.search.retrieve(
    [w.dm.id, w.dm.id, "dm_0000000000000000000000000"],
    "coastal storm flooding",
    {
      k: 2,
    },
  );
  assert.equal(hits.length, 2);
  assert.ok(hits.every((h) => h.url.includes("storm")));
  assert.ok(hits[0]!.score >= hits[1]!.score);
  assert.match(hits[0]!.body, /storm/);
  assert.equal(hits[0]!.dataModelId, w.dm.id);
  assert.ok(hits[0]!.summary.length > 0);
});

Deno.test("retrieve() ranks across data models on one scale: a small model's off-topic best match does not win", async () => {
  await using w = await world();
  // A second data model holding one article about something else entirely. Normalised within its
  // own index it would score ~1 and outrank the storm articles of the first model.
  const tech = await w.deps.repos.dataModels.create({
    id: newId("dm", w.clock),
    tenantId: w.tenantId,
    name: "Tech",
    sites: [{ domain: "chips.example", name: "Chip Weekly" }],
    marketplace: false,
    createdAt: w.clock.now().toISOString(),
  });
  await w.deps.search.ingest(tech, [{
    url: "https://chips.example/ai-accelerator",
    title: "New AI accelerator chip doubles training speed",
    body: "The accelerator chip packs more memory bandwidth for model training in data centres.",
    pubdate: hoursAgo(w, 1),
  }]);
  const hits = await w.deps.search.retrieve([tech.id, w.dm.id], "coastal storm flooding harbour", { k: 3 });
  assert.ok(hits.length >= 2);
  assert.ok(hits[0]!.url.includes("storm"), `first hit was ${hits[0]!.url}`);
  assert.ok(hits[1]!.url.includes("storm"), `second hit was ${hits[1]!.url}`);
  const chip = hits.find((h) => h.url.includes("chips.example"));
  if (chip) assert.ok(chip.score < hits[1]!.score);
});
