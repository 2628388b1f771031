import assert from "node:assert/strict";
import type { QueryCount } from "../../core/search/ports.ts";
import { CHANNEL_WEIGHTS, signalKeywords } from "../../core/search/rank/trending.ts";

const ask = (
  query: string,
  sender: string,
  session = sender,
  channel: QueryCount["channel"] = "widget",
): QueryCount => ({
  query,
  count: 1,
  sender,
  session,
  channel,
});

Deno.test("signalKeywords(): one sender counts once per keyword however many events it sends", () => {
  const flood = Array.from({ length: 500 }, (_, i) => ask(`replica watches ${i}`, "net-a", "s-1"));
  assert.equal(signalKeywords(flood).size, 0, "a keyword of one sender is noise");
  const honest = [ask("cup final", "net-b"), ask("the cup final score", "net-c")];
  assert.deepEqual([...signalKeywords([...flood, ...honest]).keys()].sort(), ["cup", "final"]);
});

Deno.test("signalKeywords(): distinct senders are capped by distinct sessions, and sessions by senders", () => {
  const oneSessionManyNetworks = Array.from({ length: 50 }, (_, i) => ask("storm", `net-${i}`, "s-same"));
  assert.equal(signalKeywords(oneSessionManyNetworks).size, 0);
  const manySessionsOneNetwork = Array.from({ length: 50 }, (_, i) => ask("storm", "net-same", `s-${i}`));
  assert.equal(signalKeywords(manySessionsOneNetwork).size, 0);
});

Deno.test("signalKeywords(): channels are normalised apart and combined by CHANNEL_WEIGHTS", () => {
  assert.ok(CHANNEL_WEIGHTS.server > CHANNEL_WEIGHTS.widget && CHANNEL_WEIGHTS.widget > CHANNEL_WEIGHTS.click);
  const widget = Array.from({ length: 40 }, (_, i) => ask("election", `w-${i}`));
  const server = Array.from({ length: 3 }, (_, i) => ask("budget", `agent-${i}`, `agent-${i}`, "server"));
  const m = signalKeywords([...widget, ...server]);
  // 40 widget senders do not outweigh 3 answered server queries: each channel is its own scale.
  assert.equal(m.get("budget"), 1);
  assert.equal(m.get("elect"), CHANNEL_WEIGHTS.widget / CHANNEL_WEIGHTS.server);
  // Clicks bring the words of the clicked article's title.
  const clicks = [1, 2].map((i): QueryCount => ({
    query: "",
    count: 1,
    sender: `c-${i}`,
    channel: "click",
    articleUrl: "https://x.example/a",
  }));
  const titled = signalKeywords(
    clicks,
    undefined,
    (url) => url === "https://x.example/a" ? "Harbour flood" : undefined,
  );
  assert.deepEqual([...titled.keys()].sort(), ["flood", "harbour"]);
});
