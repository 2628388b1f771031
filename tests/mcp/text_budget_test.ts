/**
 * A `search_articles` result is read by a model, and the MCP SDK sends it as one JSON-RPC message made
 * by one `JSON.stringify`: 1,000 results with full texts (each text twice: `structuredContent` and its
 * text rendering) were about 42 MB, which held the event loop about 300 ms (here, with the client's
 * parse in the same process, 680 ms; 70 ms now). A result now carries at most {@link MCP_TEXT_BUDGET}
 * characters of article text, shared by its results, and says so.
 */
import assert from "node:assert/strict";
import { leastLoopGap } from "../_loop_gap.ts";
import { mcpWorld } from "./_world.ts";
import { MCP_RESULTS_BUDGET, MCP_TEXT_BUDGET, SearchBudget } from "../../routes/mcp/text_budget.ts";

interface SearchResult {
  content: { type: string; text: string }[];
  structuredContent: {
    response: { results: { text?: string; highlights?: { text: string }[] }[] };
    notice?: string;
  };
  isError?: boolean;
}

const body = (i: number) =>
  Array.from({ length: 400 }, (_, s) => `Harbour item ${i} sentence ${s} of the long report.`).join(" ").slice(
    0,
    20_000,
  );

Deno.test("MCP search_articles of 1,000 full texts: at most MCP_TEXT_BUDGET characters of text, said in the result, without holding the loop", async () => {
  await using w = await mcpWorld();
  const dm = (await w.deps.repos.dataModels.get(w.ids.dataModelId))!;
  const report = await w.deps.search.ingest(
    dm,
    Array.from(
      { length: 1000 },
      (_, i) => ({ url: `https://alpha.example/t/${i}`, title: `Harbour ${i}`, body: body(i) }),
    ),
  );
  assert.equal(report.failed, 0);
  // A whole page of 1,000 results with their texts.
  const wholePage = {
    data_model_id: dm.id,
    query: "harbour report",
    num_results: 1000,
    similarity_top_k: 1000,
    contents: { text: true },
  };
  const client = await w.connect(`Bearer ${w.apiKey}`);
  const { out, worstMs } = await leastLoopGap(250, () =>
    client.callTool({
      name: "search_articles",
      arguments: wholePage,
    }) as Promise<SearchResult>);
  assert.equal(out.isError, undefined, out.content[0]?.text);
  const results = out.structuredContent.response.results;
  assert.equal(results.length, 1000, "the page is kept");
  assert.ok(results.every((r) => typeof r.text === "string" && r.text.length > 0), "every result has its text");
  const characters = results.reduce((n, r) => n + r.text!.length, 0);
  assert.ok(characters <= MCP_TEXT_BUDGET, `${characters} characters of text`);
  const notice = out.structuredContent.notice!;
  assert.match(notice, /at most 100 characters each/);
  assert.match(notice, /100,000 characters of article text/);
  assert.match(notice, /get_article/);
  assert.ok(out.content[0]!.text.endsWith(notice), "the text rendering says it too");
  assert.ok(worstMs < 250, `worst event-loop gap ${Math.round(worstMs)} ms`);

  // A batch of three such calls shares the one answer's budget: the first is served, the others are told why not.
  const call = (id: number) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: {
      name: "search_articles",
      arguments: wholePage,
    },
  });
  const batch = await leastLoopGap(250, async () => {
    const res = await fetch(`${w.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${w.apiKey}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify([call(1), call(2), call(3)]),
    });
    return { status: res.status, text: await res.text() };
  });
  assert.equal(batch.out.status, 200);
  assert.ok(batch.out.text.length < 3_000_000, `${batch.out.text.length} characters`);
  const answers = (JSON.parse(batch.out.text) as { id: number; result: SearchResult }[]).sort((a, b) => a.id - b.id);
  assert.deepEqual(answers.map((a) => a.result.isError ?? false), [false, true, true]);
  assert.match(answers[1]!.result.content[0]!.text, /0 search results left/);
  assert.ok(batch.worstMs < 250, `worst event-loop gap ${Math.round(batch.worstMs)} ms`);
});

Deno.test("MCP search_articles: highlights share the budget; a request within it is unchanged and says nothing", async () => {
  await using w = await mcpWorld();
  const dm = (await w.deps.repos.dataModels.get(w.ids.dataModelId))!;
  await w.deps.search.ingest(
    dm,
    Array.from(
      { length: 40 },
      (_, i) => ({ url: `https://alpha.example/t/${i}`, title: `Harbour ${i}`, body: body(i) }),
    ),
  );
  const client = await w.connect(`Bearer ${w.apiKey}`);
  const search = (args: Record<string, unknown>) =>
    client.callTool({
      name: "search_articles",
      arguments: { data_model_id: dm.id, query: "harbour report", ...args },
    }) as Promise<SearchResult>;

  const within = await search({ num_results: 3, contents: { text: true, max_characters: 2000 } });
  assert.equal(within.structuredContent.notice, undefined);
  assert.ok(!within.content[0]!.text.includes("characters of article text"));
  const texts = within.structuredContent.response.results.map((r) => r.text!.length);
  assert.equal(texts.length, 3);
  assert.ok(texts.every((n) => n > 1900 && n <= 2000), `${texts}`);

  // 40 results asking 10,000 characters of highlights and 20,000 of text each: 2,500 per result in all.
  const both = await search({
    num_results: 40,
    similarity_top_k: 40,
    highlights: { max_characters: 10_000, per_result: 10 },
    contents: { text: true },
  });
  const results = both.structuredContent.response.results;
  assert.equal(results.length, 40);
  const characters = results.reduce(
    (n, r) => n + r.text!.length + (r.highlights ?? []).reduce((m, h) => m + h.text.length, 0),
    0,
  );
  assert.ok(characters <= MCP_TEXT_BUDGET, `${characters} characters of text and highlights`);
  assert.ok(results.every((r) => (r.highlights ?? []).length > 0), "highlights are still given");
  assert.match(both.structuredContent.notice!, /100,000 characters of article text/);
});

Deno.test("SearchBudget.take() cuts before the search, names get_article only to callers that have it, and is shared by a batch", () => {
  const args = { data_model_id: "dm_x", query: "harbour", num_results: 50, similarity_top_k: 50 };
  const agent = new SearchBudget().take({ ...args, contents: { text: true } }, false);
  assert.deepEqual(agent.args.contents, { text: true, max_characters: 2000 });
  assert.doesNotMatch(agent.notice!, /get_article/);
  assert.match(agent.notice!, /num_results/);
  // Page 2 of 9 ranked at 5 per page holds 4 results.
  const page = new SearchBudget().take(
    { ...args, num_results: 5, similarity_top_k: 9, page: 2, contents: { text: true } },
    true,
  );
  assert.equal(page.notice, undefined);
  assert.equal(page.args.contents?.max_characters, undefined);
  assert.deepEqual(new SearchBudget().take(args, true), { args });

  // One POST's calls share it: 4 texts of 20,000 take 80,000, the next 4 get 5,000 each, then none is left.
  const batch = new SearchBudget();
  const four = { ...args, num_results: 4, similarity_top_k: 4, contents: { text: true } };
  assert.equal(batch.take(four, true).notice, undefined);
  assert.equal(batch.take(four, true).args.contents?.max_characters, 5000);
  assert.throws(() => batch.take(four, true), /article text are spent/);
  assert.deepEqual(batch.take({ ...args, num_results: 900, similarity_top_k: 900 }, true).args.num_results, 900);
  assert.throws(() => batch.take({ ...args, num_results: 100, similarity_top_k: 100 }, true), /92 search results left/);
  assert.equal(MCP_RESULTS_BUDGET, 1000);
});

/** One `POST /mcp` of these tool calls (ids from 1), its answers in id order. */
async function batchOf(
  w: Awaited<ReturnType<typeof mcpWorld>>,
  calls: { name: string; arguments: Record<string, unknown> }[],
  token = w.apiKey,
): Promise<{ id: number; result: SearchResult }[]> {
  const res = await fetch(`${w.url}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify(calls.map((params, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params }))),
  });
  assert.equal(res.status, 200);
  return ((await res.json()) as { id: number; result: SearchResult }[]).sort((a, b) => a.id - b.id);
}

Deno.test("MCP batch: a search_articles call that fails gives its share of the budget back to the calls after it", async () => {
  await using w = await mcpWorld();
  const all = { query: "council budget", num_results: 1000, similarity_top_k: 1000, contents: { text: true } };
  // A data model of no one's (another last character: one id in 32 ends in "0" already).
  const id = w.ids.dataModelId;
  const noOnes = id.slice(0, -1) + (id.endsWith("0") ? "1" : "0");
  const answers = await batchOf(w, [
    // Refused after its share was drawn.
    { name: "search_articles", arguments: { ...all, data_model_id: noOnes } },
    { name: "search_articles", arguments: { ...all, data_model_id: w.ids.dataModelId } },
  ]);
  assert.equal(answers[0]!.result.isError, true);
  assert.doesNotMatch(answers[0]!.result.content[0]!.text, /search results left/);
  assert.equal(answers[1]!.result.isError, undefined, answers[1]!.result.content[0]!.text);
  assert.ok(answers[1]!.result.structuredContent.response.results.length > 0);
});

Deno.test("MCP batch: get_article texts draw on the request's budget, cut to what is left, then refused", async () => {
  await using w = await mcpWorld();
  const dm = (await w.deps.repos.dataModels.get(w.ids.dataModelId))!;
  const url = "https://alpha.example/t/long";
  await w.deps.search.ingest(dm, [{ url, title: "Harbour long report", body: body(0) }]);
  const read = { name: "get_article", arguments: { data_model_id: dm.id, url, max_characters: 18_000 } };
  // Seven reads of 18,000 characters: five whole (90,000), one cut to the 10,000 left, one refused.
  const answers = await batchOf(w, Array.from({ length: 7 }, () => read));
  const texts = answers.filter((a) => !a.result.isError).map((a) =>
    (a.result.structuredContent as unknown as { text: string }).text
  );
  assert.equal(texts.length, 6, "one read refused");
  assert.ok(texts.reduce((n, t) => n + t.length, 0) <= MCP_TEXT_BUDGET);
  assert.equal(texts.filter((t) => t.length > 10_000).length, 5, "five read whole");
  const refused = answers.find((a) => a.result.isError)!;
  assert.match(refused.result.content[0]!.text, /article text are spent/);
  const cut = answers.filter((a) => (a.result.structuredContent as { notice?: string })?.notice);
  assert.equal(cut.length, 1);
  assert.match(cut[0]!.result.content[0]!.text, /Cut to fit: text at most 10,000 characters/);
});

/** Characters of highlights in one result. */
const highlightCharacters = (r: { highlights?: { text: string }[] }) =>
  (r.highlights ?? []).reduce((n, h) => n + h.text.length, 0);

Deno.test("MCP search_articles by an agent paying for no full text: highlights draw the budget at the summary licence's cap, what the agent can receive, not at what it asks", async (t) => {
  await using w = await mcpWorld();
  const dm = (await w.deps.repos.dataModels.get(w.ids.dataModelId))!;
  await w.deps.search.ingest(
    dm,
    Array.from(
      { length: 100 },
      (_, i) => ({ url: `https://alpha.example/h/${i}`, title: `Harbour ${i}`, body: body(i) }),
    ),
  );
  const { token } = await w.agents.issue();
  await w.buyCredit(token, "1.000000");
  // 100 results asking 10,000 characters of highlights each: the agent receives at most 1,000 per result.
  const wide = {
    data_model_id: dm.id,
    query: "harbour report",
    num_results: 100,
    similarity_top_k: 100,
    highlights: { max_characters: 10_000, per_result: 10 },
  };

  await t.step("one call that fits at the cap is served as asked, with no notice of a cut", async () => {
    const client = await w.connect(`Bearer ${token}`);
    const out = await client.callTool({ name: "search_articles", arguments: wide }) as SearchResult;
    assert.equal(out.isError, undefined, out.content[0]?.text);
    const results = out.structuredContent.response.results;
    assert.equal(results.length, 100);
    assert.ok(results.every((r) => highlightCharacters(r) > 0 && highlightCharacters(r) <= 1000));
    assert.equal(out.structuredContent.notice, undefined, out.structuredContent.notice);
  });

  await t.step("a batch is refused only once the characters it can receive pass the budget", async () => {
    const ten = { ...wide, num_results: 10, similarity_top_k: 10 };
    const answers = await batchOf(
      w,
      Array.from({ length: 3 }, () => ({ name: "search_articles", arguments: ten })),
      token,
    );
    for (const a of answers) assert.equal(a.result.isError, undefined, a.result.content[0]?.text);
    const received = answers.flatMap((a) => a.result.structuredContent.response.results).map(highlightCharacters);
    assert.equal(received.length, 30);
    assert.ok(received.reduce((n, c) => n + c, 0) <= 30_000);
  });
});

Deno.test("SearchBudget.run(): a search that fails gives back what it drew at the caller's cap, no more", async () => {
  const budget = new SearchBudget();
  const wide = {
    data_model_id: "dm_x",
    query: "harbour",
    num_results: 100,
    similarity_top_k: 100,
    highlights: { max_characters: 10_000 },
  };
  await assert.rejects(budget.run(wide, false, () => Promise.reject(new Error("upstream failed")), 1000));
  // The whole budget is back (100 texts of 1,000 fit uncut), and not a character more.
  const texts = { ...wide, highlights: undefined, contents: { text: true, max_characters: 1000 } };
  assert.equal(budget.take(texts, false).notice, undefined);
  assert.throws(() => budget.take({ ...texts, num_results: 1, similarity_top_k: 1 }, false), /article text are spent/);
});
