/**
 * Load script: what an MCP `search_articles` call costs over the same REST search.
 *
 *   deno run -A bench/mcp_overhead.ts [calls=2000]
 *
 * One server on 127.0.0.1 (the MCP test world: demo tenant, its API key, a marketplace data model
 * with articles). Both paths run over real HTTP with the tenant key, the same data model and query,
 * alternating in batches of 50 so drift hits both alike:
 *   rest: POST /app/v2/search?data_model_id=...  {"query": ...}
 *   mcp:  POST /mcp  {"jsonrpc":"2.0","method":"tools/call","params":{"name":"search_articles",...}}
 *         (a fresh stateless server and transport per request, JSON response, text rendering)
 */
import { mcpWorld } from "../tests/mcp/_world.ts";

const calls = Number(Deno.args[0] ?? 2000);
// One API key makes every call: its REST budget and its MCP tool calls' budget (the analytics limiter's) are raised
// past the run.
const w = await mcpWorld({ env: { SEARCH_RATE_LIMIT_PER_MIN: "10000000", ANALYTICS_RATE_LIMIT_PER_MIN: "1000000" } });
try {
  // More articles than the test world's three, so ranking and rendering do real work.
  const dm = (await w.deps.repos.dataModels.get(w.ids.dataModelId))!;
  const topics = ["council budget vote", "storm floods harbour", "school opens new library", "bus fares rise"];
  const items = Array.from({ length: 400 }, (_, i) => ({
    url: `https://site${i % 7}.example/a-${i}`,
    title: `${topics[i % topics.length]} ${i}`,
    author: "Desk",
    body: `Report ${i} on the ${topics[i % topics.length]}; residents and officials reacted during the week.`,
    pubdate: new Date(w.clock.now().getTime() - i * 3_600_000).toISOString(),
  }));
  const report = await w.deps.search.ingest(dm, items);
  if (report.failed) throw new Error(`${report.failed} articles failed`);

  const query = "city council budget";
  const restUrl = `${w.url}/app/v2/search?data_model_id=${w.ids.dataModelId}`;
  const restInit = {
    method: "POST",
    headers: { authorization: `Bearer ${w.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ query }),
  };
  let id = 0;
  const mcpInit = () => ({
    method: "POST",
    headers: {
      authorization: `Bearer ${w.apiKey}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: ++id,
      method: "tools/call",
      params: { name: "search_articles", arguments: { data_model_id: w.ids.dataModelId, query } },
    }),
  });
  const time = async (url: string, init: RequestInit, check: (body: string) => boolean) => {
    const t0 = performance.now();
    const res = await fetch(url, init);
    const body = await res.text();
    const ms = performance.now() - t0;
    if (res.status !== 200 || !check(body)) throw new Error(`unexpected answer ${res.status}: ${body.slice(0, 200)}`);
    return ms;
  };
  const restOk = (b: string) => b.includes('"results":[{');
  const mcpOk = (b: string) => b.includes('"structuredContent"') && !b.includes('"isError":true');
  const rest = () => time(restUrl, restInit, restOk);
  const mcp = () => time(`${w.url}/mcp`, mcpInit(), mcpOk);

  for (let i = 0; i < 200; i++) {
    await rest();
    await mcp();
  }
  const restMs: number[] = [], mcpMs: number[] = [];
  for (let done = 0; done < calls; done += 50) {
    for (let i = 0; i < 50; i++) restMs.push(await rest());
    for (let i = 0; i < 50; i++) mcpMs.push(await mcp());
  }
  const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;
  const f = (x: number) => `${x.toFixed(3)} ms`;
  const load = Deno.loadavg().map((x) => x.toFixed(1)).join(" ");
  console.log(`calls per path: ${restMs.length}; load average ${load}`);
  console.log(`rest p50 ${f(pct(restMs, 0.5))}  p90 ${f(pct(restMs, 0.9))}  p99 ${f(pct(restMs, 0.99))}`);
  console.log(`mcp  p50 ${f(pct(mcpMs, 0.5))}  p90 ${f(pct(mcpMs, 0.9))}  p99 ${f(pct(mcpMs, 0.99))}`);
  const added = pct(mcpMs, 0.5) - pct(restMs, 0.5);
  console.log(`MCP adds ${f(added)} p50 (target <= 1 ms): ${added <= 1 ? "met" : "NOT met"}`);
} finally {
  await w.close();
}
