/**
 * Issue 24, finding 5: page analysis is a small pool with a bounded queue, a deadline over the
 * wait and the run, and turns per caller. URL queries go through the real app (bearer search) to a
 * real page server on 127.0.0.1; extraction runs in the real worker pool.
 */
import assert from "node:assert/strict";
import { newId } from "../../core/ids.ts";
import type { DataModel } from "../../core/store/models.ts";
import { ARTICLE_PAGE } from "../web/_pages.ts";
import { extractArticle } from "../../core/extract/article.ts";
import { search, searchWorld } from "../search/_world.ts";

// Deep enough (75) and large enough (4,800 elements) that Readability still runs on it, which
// takes it seconds on a busy machine; past either limit extraction reads plain text, quickly.
const SLOW_PAGE = "<html><head><title>Slow</title></head><body>" +
  ("<div><span>slow words here</span>".repeat(75) + "</div>".repeat(75)).repeat(32) + "</body></html>";

/** A page server on 127.0.0.1: `/slow/<n>` is slow to analyse, `/fast/<n>` is an ordinary article. */
function pageServer() {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const path = new URL(req.url).pathname;
    const body = path.startsWith("/slow/") ? SLOW_PAGE : ARTICLE_PAGE;
    return new Response(body, { headers: { "content-type": "text/html; charset=utf-8" } });
  });
  return {
    url: (path: string) => `http://127.0.0.1:${server.addr.port}${path}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** A second tenant with its own key and data model, in the same world. */
async function otherTenant(w: Awaited<ReturnType<typeof searchWorld>>) {
  const { tenantId, key } = await w.tenantWithKey("Beta Media");
  const dm = await w.deps.repos.dataModels.create(
    {
      id: newId("dm", w.clock),
      tenantId,
      name: "Other",
      sites: [{ domain: "beta.example", name: "Beta Times" }],
      marketplace: false,
      createdAt: w.clock.now().toISOString(),
    } satisfies DataModel,
  );
  await w.deps.search.ingest(dm, [
    {
      url: "https://beta.example/1",
      title: "Harbour storm",
      body: "A storm flooded the harbour.",
      pubdate: "2026-11-20",
    },
  ]);
  return { key, dm };
}

const timed = async <T>(work: Promise<T>) => {
  const started = performance.now();
  const out = await work;
  return { out, ms: performance.now() - started };
};

Deno.test("page analysis: eight slow pages from one caller delay another caller's URL query by less than 1 s", async () => {
  await using pages = pageServer();
  // A 2 s deadline: the two workers are busy with slow pages for all of it, so a queue in arrival
  // order would hold the other caller's query about 1.7 s; the last slow pages then end at the
  // deadline instead of running on (seconds of CPU that nothing here measures).
  await using w = await searchWorld({ env: { ALLOW_PRIVATE_URLS: "true", PAGE_ANALYSIS_TIMEOUT_MS: "2000" } });
  const other = await otherTenant(w);
  const query = (n: number) => search(w, { query: pages.url(`/fast/${n}`) }, { dmId: other.dm.id, key: other.key });
  // Baseline: the other caller alone (the first query also starts the workers).
  assert.equal((await query(0)).status, 200);
  const alone = await timed(query(1));
  assert.equal(alone.out.status, 200);

  const slow = Array.from({ length: 8 }, (_, i) => search(w, { query: pages.url(`/slow/${i}`) }));
  await new Promise((r) => setTimeout(r, 300)); // the slow pages are running and queued
  const busy = await timed(query(2));
  assert.equal(busy.out.status, 200, JSON.stringify(busy.out.json));
  const delay = busy.ms - alone.ms;
  console.log(`URL query alone ${Math.round(alone.ms)} ms, beside eight slow pages ${Math.round(busy.ms)} ms`);
  assert.ok(delay < 1000, `the other caller's query was delayed ${Math.round(delay)} ms`);
  // The slow caller's pages end by the deadline, each one way or the other: none hangs.
  for (const r of await Promise.all(slow)) assert.ok([200, 422, 503].includes(r.status), String(r.status));
});

Deno.test("page analysis: a full queue answers 503 with Retry-After, and a page waiting past the deadline fails at the deadline", async () => {
  // The deadline is set from this machine's speed: a slow page takes at least twice as long. One
  // run, cold: it compiles Readability as it goes, as the worker's run does (warmed on an ordinary
  // page only), so a third of it stays under half of the worker's even if compiling cost half as
  // much again (a second, warm run to measure cost about 1 s of CPU).
  const started0 = performance.now();
  extractArticle(SLOW_PAGE);
  const deadlineMs = Math.round(Math.min(3000, Math.max(300, (performance.now() - started0) / 3)));
  await using pages = pageServer();
  await using w = await searchWorld({
    env: {
      ALLOW_PRIVATE_URLS: "true",
      PAGE_ANALYSIS_WORKERS: "1",
      PAGE_ANALYSIS_QUEUE: "2",
      PAGE_ANALYSIS_QUEUE_PER_CALLER: "2",
      PAGE_ANALYSIS_TIMEOUT_MS: String(deadlineMs),
    },
  });
  // Warm the worker, so its start-up is not part of what follows.
  assert.equal((await search(w, { query: pages.url("/fast/0") })).status, 200);
  const started = performance.now();
  // One runs, two wait: the queue is full.
  const held = [1, 2, 3].map((i) => timed(search(w, { query: pages.url(`/slow/${i}`) })));
  await new Promise((r) => setTimeout(r, Math.min(100, deadlineMs / 3)));
  const refused = await search(w, { query: pages.url("/slow/4") });
  assert.equal(refused.status, 503);
  assert.match(refused.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
  assert.deepEqual(refused.json, { message: "query: page analysis is busy, try again shortly" });
  // The deadline covers the wait: the pages behind the running one fail at the deadline, not after it.
  for (const r of await Promise.all(held)) {
    assert.equal(r.out.status, 422, JSON.stringify(r.out.json));
    assert.equal(
      r.out.json.message,
      `query: the URL could not be analysed: page analysis took longer than ${deadlineMs} ms`,
    );
  }
  const allDone = performance.now() - started;
  assert.ok(allDone < deadlineMs + 1000, `all three ended ${Math.round(allDone)} ms after they were sent`);
  // The pool recovers: a new page is analysed.
  assert.equal((await search(w, { query: pages.url("/fast/5") })).status, 200);
});
