/**
 * Full text on the storefront: its own `full_text` meter with its own price in /services, the
 * manifest and llms.txt; a paid search with `contents: {text: true}` needs a plan whose meters
 * include full_text (else 403 plan_required, reason not_included_in_plan, and no text), and is
 * billed a query plus one full_text per text served, through the real payproxy route.
 */
import assert from "node:assert/strict";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import { fullTextsAsked, searchBodyOf } from "../../core/commerce/proxy.ts";
import { seedCommerceDemo } from "../../fixtures/commerce_demo.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedPayproxySecret } from "../../fixtures/payproxy_demo.ts";
import { seedStorefront } from "../../fixtures/storefront.ts";
import { newId } from "../../core/ids.ts";
import { createTestWorld, type TestWorld } from "../_helpers.ts";
import { challengesOf, paymentAuthorization, postJson, TestAgents } from "../commerce/_helpers.ts";

async function world() {
  const self: { fetch?: (req: Request) => Response | Promise<Response> } = {};
  // Outbound calls to this service's own address (the allowance check) are served in-process.
  const fetch: typeof globalThis.fetch = (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).origin === "http://svc.test") return Promise.resolve(self.fetch!(req));
    return Promise.reject(new Error(`unexpected outbound call to ${req.url}`));
  };
  const w = await createTestWorld({ fetch });
  self.fetch = (req) => w.app.fetch(req);
  const seeded = await seedDemo(w.deps, [seedStorefront, seedPayproxySecret, seedCommerceDemo]);
  return { w, ids: seeded.ids };
}

const on = (init: RequestInit & { token?: string }) => {
  const headers = new Headers(init.headers);
  headers.set("host", "svc.test");
  if (init.token) headers.set("authorization", `Bearer ${init.token}`);
  return { ...init, headers };
};

/** Buys $1 of `planId` for the agent holding `token`, with the sandbox wallet. */
async function buyWithWallet(w: TestWorld, planId: string, token: string): Promise<void> {
  const first = await w.app.request(
    `http://svc.test/plans/${planId}/purchase`,
    on({ ...postJson({ amountUsd: "1.000000" }), token }),
  );
  const wallet = challengesOf(first).find((c) => c.method === "wallet")!;
  await first.body?.cancel();
  const bought = await w.app.request(
    `http://svc.test/plans/${planId}/purchase`,
    on(postJson({ amountUsd: "1.000000" }, {
      authorization: paymentAuthorization(wallet, { token: SANDBOX_TOKENS.wallet.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    })),
  );
  assert.equal(bought.status, 200);
  await bought.body?.cancel();
}

Deno.test("fullTextsAsked(): the page size at most similarity_top_k when contents.text is true, else 0", () => {
  const b = (v: unknown) => searchBodyOf(new TextEncoder().encode(JSON.stringify(v)));
  assert.equal(fullTextsAsked(b({ query: "x" })), 0);
  assert.equal(fullTextsAsked(b({ query: "x", contents: { text: false } })), 0);
  assert.equal(fullTextsAsked(b({ query: "x", contents: { text: true } })), 9);
  assert.equal(fullTextsAsked(b({ query: "x", contents: { text: true }, num_results: 3 })), 3);
  assert.equal(fullTextsAsked(b({ query: "x", contents: { text: true }, similarity_top_k: 2 })), 2);
  assert.equal(fullTextsAsked(searchBodyOf(new TextEncoder().encode("{not json"))), 0);
});

Deno.test("storefront full_text: priced meter in /services and llms.txt; 403 not_included_in_plan without it; billed per text with it", async () => {
  const { w, ids } = await world();
  await using _ = w;
  const { catalog } = w.deps.commerce;
  const dm = (await w.deps.repos.dataModels.get(ids.dataModelId))!;
  const ingested = await w.deps.search.ingest(dm, [
    {
      url: "https://alpha.example/budget",
      title: "City council passes the budget",
      body_html: "<h2>Budget</h2><p>The city council passed the budget, with more money for buses.</p>",
    },
    { url: "https://alpha.example/parks", title: "Council budget funds parks", body: "Parks get a bigger budget." },
  ]);
  assert.equal(ingested.failed, 0);
  const search = (token: string, body: unknown) =>
    w.app.request(`http://svc.test/v2/search?data_model_id=${dm.id}`, on({ ...postJson(body), token }));

  // Summary licence: no full_text meter is sold.
  let services = await (await w.app.request("http://svc.test/services", on({}))).json();
  let news = services.services.find((s: { modelId: string }) => s.modelId === dm.id);
  assert.deepEqual(news.meters.map((m: { meterSlug: string }) => m.meterSlug), ["query"]);

  await w.deps.repos.dataModels.update({ ...dm, license: "full_text" });
  await catalog.setPricing("demo", { defaultQueryPriceMicros: 10_000, fullTextPriceMicros: 30_000 });
  services = await (await w.app.request("http://svc.test/services", on({}))).json();
  news = services.services.find((s: { modelId: string }) => s.modelId === dm.id);
  assert.deepEqual(news.meters[1], { meterSlug: "full_text", priceUsd: "0.030000", unit: "article text" });
  const llms = await (await w.app.request("http://svc.test/llms.txt", on({}))).text();
  assert.match(llms, /0\.030000 USD per full text/);

  // An agent holding the query-only demo credit plan: full text is not included.
  const agents = new TestAgents(w.deps, "demo");
  const { token } = await agents.issue();
  const buy = (planId: string) => buyWithWallet(w, planId, token);
  const queryOnly = (await catalog.listPlans("demo")).find((p) => p.kind === "credit")!;
  await buy(queryOnly.id);
  const withText = await catalog.addCreditPlan("demo", {
    name: "Full text credit",
    meters: ["query", "full_text"],
    minimumMicros: 100_000,
    maximumMicros: 100_000_000,
  });

  const denied = await search(token, { query: "city council budget", contents: { text: true } });
  assert.equal(denied.status, 403);
  const deniedBody = await denied.json();
  assert.equal(deniedBody.error, "plan_required");
  assert.equal(deniedBody.reason, "not_included_in_plan");
  assert.deepEqual(deniedBody.meters, [{ serviceSlug: "demo-news", meterSlug: "full_text" }]);
  assert.deepEqual(deniedBody.plans.map((p: { id: string }) => p.id), [withText.id]);
  assert.ok(!JSON.stringify(deniedBody).includes('"text"'));

  // Without contents, the query-only plan still serves the search.
  const plain = await search(token, { query: "city council budget", num_results: 2 });
  assert.equal(plain.status, 200);
  await plain.body?.cancel();

  await buy(withText.id);
  const res = await search(token, { query: "city council budget", contents: { text: true }, num_results: 2 });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get("zc-usage-error"), null);
  const usage = JSON.parse(res.headers.get("zc-usage")!);
  const body = await res.json();
  const texts = body.response.results.filter((r: { text?: string }) => typeof r.text === "string").length;
  assert.ok(texts >= 1);
  assert.deepEqual(usage, [
    { serviceSlug: "demo-news", meterSlug: "query", quantity: 1 },
    { serviceSlug: "demo-news", meterSlug: "full_text", quantity: texts },
  ]);
  const ents = (await (await w.app.request("http://svc.test/agent/entitlements", on({ token }))).json()).entitlements;
  const left = ents.find((e: { planId: string }) => e.planId === withText.id);
  // 1.00 - 0.01 (query) - 0.03 per text.
  assert.equal(left.remainingUsd, (1 - 0.01 - 0.03 * texts).toFixed(6));
});

Deno.test("storefront highlights without full text paid for: at most the summary budget of passages, never the body", async () => {
  const { w, ids } = await world();
  await using _ = w;
  const dm = (await w.deps.repos.dataModels.get(ids.dataModelId))!;
  // Licensed for full text, which the storefront sells as its own meter.
  await w.deps.repos.dataModels.update({ ...dm, license: "full_text" });
  const sentences = Array.from({ length: 100 }, (_, i) => `Paragraph ${i} of the bridge works report is here.`);
  const ingested = await w.deps.search.ingest(dm, [
    { url: "https://alpha.example/works", title: "Bridge works", body: sentences.join(" ") },
  ]);
  assert.equal(ingested.failed, 0);
  const agents = new TestAgents(w.deps, "demo");
  const { token } = await agents.issue();
  // The query-only demo credit plan: a query costs 0.01, a text would need a full_text plan.
  const plan = (await w.deps.commerce.catalog.listPlans("demo")).find((p) => p.kind === "credit")!;
  await buyWithWallet(w, plan.id, token);

  for (const highlights of [{ max_characters: 10_000, per_result: 1 }, { max_characters: 10_000, per_result: 10 }]) {
    const res = await w.app.request(
      `http://svc.test/v2/search?data_model_id=${dm.id}`,
      on({ ...postJson({ query: "bridge works report", num_results: 1, highlights }), token }),
    );
    const text = await res.text();
    assert.equal(res.status, 200, text);
    const body = JSON.parse(text);
    const shown = (body.response.results[0].highlights as { text: string }[]).map((h) => h.text).join(" ");
    assert.ok(shown.length > 0);
    assert.ok(shown.length <= 1000, `${shown.length} characters of the body for the price of a query`);
    assert.ok(!shown.includes(sentences.at(-1)!));
    assert.equal(body.usage.cost_usd, "0.010000");
  }
});

Deno.test("storefront billing: usage is priced at the service called, not at another data model of the same slug", async () => {
  const { w, ids } = await world();
  await using _ = w;
  const { catalog } = w.deps.commerce;
  const demo = (await w.deps.repos.dataModels.get(ids.dataModelId))!;
  // A second marketplace data model sold under the same tool name, this one licensed for full text
  // (made later, so it is listed after the first).
  w.clock.advance(1000);
  const twin = {
    ...demo,
    id: newId("dm", w.clock),
    name: "Demo News (full text)",
    license: "full_text" as const,
    createdAt: w.clock.now().toISOString(),
  };
  await w.deps.repos.dataModels.create(twin);
  const ingested = await w.deps.search.ingest(twin, [
    { url: "https://alpha.example/budget", title: "City council passes the budget", body: "Buses get money." },
  ]);
  assert.equal(ingested.failed, 0);
  const plan = await catalog.addCreditPlan("demo", {
    name: "Full text credit",
    meters: ["query", "full_text"],
    minimumMicros: 100_000,
    maximumMicros: 100_000_000,
  });
  const agents = new TestAgents(w.deps, "demo");
  const { token } = await agents.issue();
  await buyWithWallet(w, plan.id, token);

  const res = await w.app.request(
    `http://svc.test/v2/search?data_model_id=${twin.id}`,
    on({ ...postJson({ query: "city council budget", contents: { text: true }, num_results: 1 }), token }),
  );
  const body = await res.json();
  assert.equal(res.status, 200);
  assert.equal(body.response.results.filter((r: { text?: string }) => typeof r.text === "string").length, 1);
  // A query (0.01) and a text (0.02): the text is not free because the other model sells none.
  assert.equal(res.headers.get("zc-usage-error"), null);
  assert.equal(body.usage.cost_usd, "0.030000");
  assert.equal(body.usage.balance_usd, "0.970000");
});

Deno.test("searchBodyOf() of 8 MB nested 4,000,000 deep: 0 within 0.5 s, without parsing it", () => {
  // Any agent's paid search body is read here before it pays: JSON.parse of deep nesting is slow.
  const deep = new TextEncoder().encode(
    `{"contents":{"text":true},"x":${"[".repeat(4_000_000)}${"]".repeat(4_000_000)}}`,
  );
  const started = performance.now();
  assert.equal(fullTextsAsked(searchBodyOf(deep)), 0);
  const ms = performance.now() - started;
  assert.ok(ms < 500, `${Math.round(ms)} ms`);
});
