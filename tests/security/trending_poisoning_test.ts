/**
 * Issue 24, finding 2 (second half): trending keywords came from the newest 500 `query` events per
 * AI model, so one forged batch of 500 identical prompts replaced them and the attacker's articles
 * entered the top 10 (which payproxy, paid-proxy and MCP agents buy). Now a keyword counts distinct
 * senders and sessions per channel: one sender, session or batch adds at most 1 to it.
 */
import assert from "node:assert/strict";
import { impressionEvents } from "../../analytics/impressions.ts";
import { newId } from "../../core/ids.ts";
import { hoursAgo, search, searchWorld } from "../search/_world.ts";

const ORIGIN = "https://reader.example";

async function world() {
  const w = await searchWorld({ env: { TRUST_PROXY: "1" } });
  const now = w.clock.now().toISOString();
  const am = await w.deps.repos.aiModels.create({
    id: newId("am", w.clock),
    tenantId: w.tenantId,
    name: "Assistant",
    groundingDataModelIds: [w.dm.id],
    provider: { kind: "extractive" },
    output: { kind: "text" },
    private: false,
    marketplace: false,
    createdAt: now,
  });
  const wd = await w.deps.repos.widgets.create({
    id: newId("wd", w.clock),
    tenantId: w.tenantId,
    name: "Widget",
    aiModelId: am.id,
    allowedOrigins: [ORIGIN],
    deploymentType: "embed",
    createdAt: now,
  });
  // Older articles, so no title is bursting: the keywords come from the queries alone.
  const r = await w.deps.search.ingest(w.dm, [
    {
      url: "https://alpha.example/cup",
      title: "City club wins the cup final in extra time",
      body: "The striker scored in extra time and fans celebrated the cup final.",
      pubdate: hoursAgo(w, 50),
    },
    {
      url: "https://beta.example/storm",
      title: "Coastal storm forces evacuation of low-lying streets",
      body: "Emergency crews evacuated residents as the coastal storm flooded streets.",
      pubdate: hoursAgo(w, 60),
    },
    {
      url: "https://gamma.example/watches",
      title: "Replica luxury watches sold at a discount",
      body: "Replica luxury watches are sold at a steep discount by an online seller.",
      pubdate: hoursAgo(w, 70),
    },
  ]);
  assert.equal(r.failed, 0);

  /** One widget batch from `address`. */
  const send = async (address: string, events: Record<string, unknown>[]) => {
    const res = await w.app.request("/v1/events", {
      method: "POST",
      headers: { origin: ORIGIN, "content-type": "application/json", "x-forwarded-for": address },
      body: JSON.stringify({ widget_id: wd.id, events }),
    });
    assert.equal(res.status, 202, await res.clone().text());
  };
  const ask = (session: string, prompt: string) => ({
    event_type: "query",
    session_id: session,
    interaction_type: "free_form",
    prompt,
  });
  /** The trending keywords and top URLs now (after the trend cache's 5 minutes). */
  const trending = async () => {
    await w.deps.events.flush();
    w.clock.advance(6 * 60_000);
    const res = await search(w, { query: "today", search_algorithm: "trending", similarity_top_k: 2 });
    assert.equal(res.status, 200);
    const words = /trending keywords: ([^;]*)/.exec(res.json.response.message)?.[1]?.split(", ") ?? [];
    return { words, urls: res.json.response.results.map((x: { url: string }) => x.url) as string[] };
  };
  return Object.assign(w, { send, ask, trending, widget: () => Promise.resolve(wd) });
}

Deno.test("trending: one forged batch of 500 identical prompts from one session does not change the top keywords", async () => {
  await using w = await world();
  // Honest readers: four ask about the cup final, three about the storm, each from their own address.
  for (let i = 0; i < 4; i++) await w.send(`203.0.113.${i + 1}`, [w.ask(`r-cup-${i}`, "who won the cup final")]);
  for (let i = 0; i < 3; i++) await w.send(`198.51.100.${i + 1}`, [w.ask(`r-storm-${i}`, "storm evacuation")]);
  const before = await w.trending();
  assert.ok(before.words.includes("cup") && before.words.includes("storm"), before.words.join());

  // The finding's batch: 500 identical prompts, one session, one address.
  await w.send("192.0.2.66", Array.from({ length: 500 }, () => w.ask("attacker", "replica luxury watches discount")));
  const afterOne = await w.trending();
  assert.deepEqual(afterOne.words, before.words);
  assert.ok(!afterOne.urls.includes("https://gamma.example/watches"), afterOne.urls.join());

  // Harder: 500 sessions in one batch from the same address (a minute later: within its limit).
  w.clock.advance(60_000);
  await w.send(
    "192.0.2.66",
    Array.from({ length: 500 }, (_, i) => w.ask(`forged-${i}`, "replica luxury watches discount")),
  );
  const afterMany = await w.trending();
  assert.deepEqual(afterMany.words, before.words);
  assert.ok(!afterMany.urls.includes("https://gamma.example/watches"), afterMany.urls.join());
});

Deno.test("trending: distinct readers still make a trend (the signal is filtered, not switched off)", async () => {
  await using w = await world();
  for (let i = 0; i < 4; i++) await w.send(`203.0.113.${i + 1}`, [w.ask(`r-cup-${i}`, "who won the cup final")]);
  for (let i = 0; i < 5; i++) await w.send(`198.51.100.${i + 1}`, [w.ask(`r-w-${i}`, "luxury watches")]);
  const { words, urls } = await w.trending();
  assert.ok(words.slice(0, 2).includes("watches"), words.join());
  assert.ok(words.includes("cup"), words.join());
  assert.ok(urls.includes("https://gamma.example/watches"), urls.join());
});

Deno.test("trending: a widget or server batch cannot choose its sender key (client_key is refused)", async () => {
  await using w = await world();
  const forged = { ...w.ask("s-1", "replica watches"), client_key: "0123456789abcdef" };
  const widgetId = (await w.widget()).id;
  const senders: [Record<string, string>, Record<string, unknown>][] = [
    [{ origin: ORIGIN }, { widget_id: widgetId }],
    [{ authorization: `Bearer ${w.key}` }, {}],
  ];
  for (const [headers, extra] of senders) {
    const res = await w.app.request("/v1/events", {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ ...extra, events: [forged] }),
    });
    assert.equal(res.status, 422);
    assert.deepEqual(await res.json(), { message: "events.0.client_key: is recorded by the service itself, not sent" });
  }
});

Deno.test("trending: searches count per caller (one paying agent repeating a search is one voice)", async () => {
  await using w = await world();
  const searched = (caller: string, query: string) =>
    impressionEvents({ tenantId: w.tenantId, dataModelId: w.dm.id, query, caller, at: w.clock.now(), results: [] });
  // The events a page of results records (what the search engine hands to analytics).
  await w.deps.events.record(Array.from({ length: 50 }, () => searched("payproxy:agent-1", "replica watches")).flat());
  const alone = await w.trending();
  assert.ok(!alone.words.includes("watches"), alone.words.join());
  await w.deps.events.record(["payproxy:agent-2", "payproxy:agent-3"].flatMap((a) => searched(a, "replica watches")));
  const several = await w.trending();
  assert.ok(several.words.includes("watches"), several.words.join());
});

Deno.test("trending: widget recommendations asked again and again from one address are one sender, not one per request", async () => {
  await using w = await world();
  for (let i = 0; i < 4; i++) await w.send(`203.0.113.${i + 1}`, [w.ask(`r-cup-${i}`, "who won the cup final")]);
  for (let i = 0; i < 3; i++) await w.send(`198.51.100.${i + 1}`, [w.ask(`r-storm-${i}`, "storm evacuation")]);
  const before = await w.trending();
  // The public recommendations route, within its per-address limit: each request is a served search.
  const wd = (await w.widget()).id;
  for (let i = 0; i < 20; i++) {
    const res = await w.app.request(`/widget/v1/${wd}/recommend`, {
      method: "POST",
      headers: { origin: ORIGIN, "content-type": "application/json", "x-forwarded-for": "192.0.2.66" },
      body: JSON.stringify({ query: "replica luxury watches discount", session_id: `forged-${i}` }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
  }
  await w.deps.events.stop(); // hands in the buffered search events
  const after = await w.trending();
  assert.deepEqual(after.words, before.words);
  assert.ok(!after.urls.includes("https://gamma.example/watches"), after.urls.join());
});
