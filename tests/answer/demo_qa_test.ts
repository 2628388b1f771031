import assert from "node:assert/strict";
import { NOTHING_FOUND } from "../../core/answer/extractive.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedDemoArticles } from "../../fixtures/demo_articles.ts";
import { bearer, createTestWorld } from "../_helpers.ts";

/** Questions over the demo corpus, the article holding the answer, and words the answer must quote. */
const PAIRS: { q: string; slug: string; quote: RegExp }[] = [
  { q: "What did the council decide?", slug: "council-approves-riverside-footbridge", quote: /footbridge/ },
  {
    q: "How much will the Riverside footbridge cost?",
    slug: "council-approves-riverside-footbridge",
    quote: /4\.2 million/,
  },
  {
    q: "What happens to parking fees in the city centre?",
    slug: "council-budget-vote-freezes-parking-fees",
    quote: /freeze/,
  },
  { q: "When does the central library reopen?", slug: "central-library-reopens-after-renovation", quote: /3 March/ },
  {
    q: "Why was the island ferry service suspended?",
    slug: "ferry-service-suspended-engine-fault",
    quote: /engine fault/,
  },
  { q: "How many jobs will the battery factory create?", slug: "battery-factory-350-jobs", quote: /350 jobs/ },
  {
    q: "Which school won the robotics contest?",
    slug: "robotics-contest-northgate-academy",
    quote: /Northgate Academy/,
  },
  { q: "When will the Mill Road water main repairs finish?", slug: "mill-road-water-main-repairs", quote: /Friday/ },
  { q: "Who is the new police chief?", slug: "new-police-chief-named", quote: /Maria Okafor/ },
  { q: "What caused the power outage?", slug: "storm-power-outage-fallen-tree", quote: /fallen oak tree/ },
  {
    q: "What did St Anne's hospital announce?",
    slug: "hospital-announces-cancer-wing",
    quote: /cancer treatment wing/,
  },
  { q: "How much will a single bus fare cost in January?", slug: "bus-fares-rise-january", quote: /2\.10/ },
];

async function demoWorld() {
  const w = await createTestWorld();
  const seeded = await seedDemo(w.deps, [seedDemoArticles]);
  const models = await w.deps.repos.aiModels.listByTenant(seeded.ids.tenantId);
  const assistant = models.find((m) => m.output.kind === "text" && m.provider.kind === "extractive")!;
  const ask = async (query: string, accept = "application/json") => {
    const res = await w.app.request(`/app/aimodel/${assistant.id}`, {
      method: "POST",
      headers: { ...bearer(seeded.apiKey!), "content-type": "application/json", accept },
      body: JSON.stringify({ query }),
    });
    return { status: res.status, text: await res.text() };
  };
  return Object.assign(w, { ask });
}

Deno.test("the demo assistant answers each demo question from, and citing, the article that holds the fact", async () => {
  await using w = await demoWorld();
  const failures: string[] = [];
  for (const { q, slug, quote } of PAIRS) {
    const r = await w.ask(q);
    assert.equal(r.status, 200, q);
    const body = JSON.parse(r.text);
    const urls = body.citations.map((c: { url: string }) => c.url);
    if (!urls.some((u: string) => u.endsWith(`/local/${slug}`))) failures.push(`${q} cites ${urls.join(", ")}`);
    else if (!quote.test(body.message)) failures.push(`${q} does not quote ${quote}: ${body.message}`);
  }
  assert.deepEqual(failures, []);
});

Deno.test("an answer's citations carry title, url, site, pubdate and a tracking source_url that records the click", async () => {
  await using w = await demoWorld();
  const body = JSON.parse((await w.ask("What did the council decide?")).text);
  assert.doesNotMatch(body.message, new RegExp(NOTHING_FOUND));
  const council = body.citations.find((c: { url: string }) =>
    c.url.endsWith("/local/council-approves-riverside-footbridge")
  );
  assert.equal(council.title, "City council decides to build the Riverside footbridge");
  assert.equal(council.site, "Greenfield Gazette");
  assert.match(council.pubdate, /^\d{4}-\d\d-\d\dT/);
  assert.match(council.source_url, /^http:\/\/svc\.test\/r\/[\w.-]+$/);
  assert.ok(body.message.includes(council.url), "the sources block names the same article");
  const click = await w.app.request(council.source_url.replace("http://svc.test", ""));
  assert.equal(click.status, 302);
  assert.equal(click.headers.get("location"), council.url);
});

Deno.test("the SSE done event carries the same citations; nothing relevant gets the plain refusal and no citations", async () => {
  await using w = await demoWorld();
  const sse = await w.ask("What did the council decide?", "text/event-stream");
  const done = sse.text.split("\n\n").find((e) => e.startsWith("event: done"))!;
  const data = JSON.parse(done.split("\n").find((l) => l.startsWith("data: "))!.slice(6));
  const plain = JSON.parse((await w.ask("What did the council decide?")).text);
  assert.equal(data.message, plain.message);
  assert.deepEqual(
    data.citations.map((c: { url: string }) => c.url),
    plain.citations.map((c: { url: string }) => c.url),
  );
  const none = JSON.parse((await w.ask("What is the boiling point of liquid helium on Neptune?")).text);
  assert.equal(none.message, NOTHING_FOUND);
  assert.deepEqual(none.citations, []);
});
