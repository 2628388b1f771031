import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { hoursAgo, search, searchWorld } from "../search/_world.ts";

async function readershipWorld() {
  // Behind one proxy, so each follow can come from its own reader's address (a repeat from one
  // address within the dedupe window counts once).
  const w = await searchWorld({ env: { TRUST_PROXY: "1" } });
  await w.deps.search.ingest(w.dm, [
    {
      url: "https://alpha.example/rates",
      title: "Central bank holds <b>interest</b> rates steady",
      body: "The central bank kept interest rates unchanged as inflation cooled. Mortgage holders are relieved.",
      pubdate: hoursAgo(w, 30),
    },
    {
      url: "https://beta.example/storm",
      title: "Coastal storm floods the harbour",
      body: "Heavy rain and a storm surge flooded streets near the harbour. Residents were evacuated overnight.",
      pubdate: hoursAgo(w, 5),
    },
  ]);
  return w;
}

let readers = 0;
const follow = async (w: Awaited<ReturnType<typeof readershipWorld>>, sourceUrl: string) => {
  const res = await w.app.request(new URL(sourceUrl).pathname, {
    redirect: "manual",
    headers: { "x-forwarded-for": `203.0.113.${++readers}` },
  });
  assert.equal(res.status, 302);
  await res.body?.cancel();
};

Deno.test("search results are recorded as impressions; /v1/analytics/articles ranks articles and sites by clicks", async () => {
  await using w = await readershipWorld();
  // A reader on the tenant's own key: two searches, one click on the storm article.
  const first = await search(w, { query: "storm harbour" });
  assert.equal(first.status, 200);
  await search(w, { query: "interest rates" });
  const storm = first.json.response.results.find((r: { url: string }) => r.url.includes("storm"));
  await follow(w, storm.source_url);
  // An agent on payproxy (no tenant on the call): its results and click belong to the data model's owner.
  const agent = await w.deps.search.recommend(w.dm, { query: "storm" }, { caller: "payproxy:bot-7" });
  const agentStorm = agent.response.results.find((r) => r.url?.includes("storm"))!;
  await follow(w, agentStorm.source_url!);
  await follow(w, agentStorm.source_url!);
  // A click known only by its URL (no data model or article): its site's, never an article row of its own.
  await w.deps.events.record([{
    event_type: "article_click",
    ts: w.deps.clock.now().toISOString(),
    tenant_id: w.dm.tenantId,
    url: "https://beta.example/elsewhere",
  }]);
  await w.deps.events.stop(); // hands in the buffered impressions, flushes the log

  const res = await w.app.request("/v1/analytics/articles", { headers: bearer(w.key) });
  assert.equal(res.status, 200);
  const body = await res.json();
  const top = body.articles[0];
  assert.equal(top.url, "https://beta.example/storm");
  assert.equal(top.title, "Coastal storm floods the harbour");
  assert.equal(top.clicks, 3);
  const shownStorm = [first.json, agent].reduce(
    (n: number, r: { response: { results: { url?: string }[] } }) =>
      n + r.response.results.filter((x) => x.url?.includes("storm")).length,
    0,
  ) + 0;
  assert.ok(top.impressions >= shownStorm);
  // Impression-based and capped (issue 24): at most one click per impression counts for the rate.
  assert.equal(top.ctr, Math.round((Math.min(top.clicks, top.impressions) * 10_000) / top.impressions) / 100);
  const rates = body.articles.find((a: { url: string }) => a.url.includes("rates"));
  assert.equal(rates.title, "Central bank holds <b>interest</b> rates steady"); // data, not markup
  assert.equal(rates.clicks, 0);
  assert.ok(rates.impressions >= 1);
  assert.deepEqual(body.articles.map((a: { url: string }) => a.url).sort(), [
    "https://alpha.example/rates",
    "https://beta.example/storm",
  ]);
  assert.deepEqual(body.sites.map((s: { site: string }) => s.site), ["beta.example", "alpha.example"]);
  assert.equal(body.sites[0].clicks, 4);

  const agents = await (await w.app.request("/v1/analytics/agents", { headers: bearer(w.key) })).json();
  assert.deepEqual(agents.agents.map((a: { agent_identity: string }) => a.agent_identity), ["payproxy:bot-7"]);
  const bot = agents.agents[0];
  assert.equal(bot.channel, "payproxy");
  assert.equal(bot.searches, 1);
  assert.equal(bot.clicks, 2);
  assert.equal(bot.results_surfaced, agent.response.results.length);
  assert.equal(bot.articles_surfaced, agent.response.results.length);
  assert.equal(
    bot.click_through_rate,
    Math.round((Math.min(2, bot.results_surfaced) * 10_000) / bot.results_surfaced) / 100,
  );

  // Data model filter: the tenant's own is fine, another tenant's or an unknown one is a 400.
  const scoped = await w.app.request(`/v1/analytics/articles?data_model_id=${w.dm.id}`, { headers: bearer(w.key) });
  assert.equal(scoped.status, 200);
  const other = await w.tenantWithKey("Other");
  const foreign = await w.app.request(`/v1/analytics/articles?data_model_id=${w.dm.id}`, {
    headers: bearer(other.key),
  });
  assert.equal(foreign.status, 400);
  assert.deepEqual(await foreign.json(), { message: "data_model_id not found" });
  // Another tenant sees none of it.
  const theirs = await (await w.app.request("/v1/analytics/articles", { headers: bearer(other.key) })).json();
  assert.deepEqual(theirs.articles, []);
  const theirAgents = await (await w.app.request("/v1/analytics/agents", { headers: bearer(other.key) })).json();
  assert.deepEqual(theirAgents.agents, []);
  for (const path of ["articles", "agents"]) {
    assert.equal((await w.app.request(`/v1/analytics/${path}`)).status, 401);
    const bad = await w.app.request(`/v1/analytics/${path}?limit=0`, { headers: bearer(w.key) });
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
  }
});
