import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { ORIGIN, widgetWorld } from "./_world.ts";

interface ArticleRow {
  title: string;
  url: string;
  impressions: number;
}

Deno.test("POST /widget/v1/{wd}/recommend records as impressions only the articles it shows, never the page itself", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const page = a.articles.find((x) => x.title.startsWith("Council"))!;
  // On the article's own page: the search ranks the page first (it is most like itself), the route leaves it out.
  const res = await w.call(`/${a.widget.id}/recommend`, { body: { page_url: page.url, limit: 2 } });
  assert.equal(res.status, 200);
  const shown = (await res.json()).results.map((r: { title: string }) => r.title);
  assert.equal(shown.length, 2);
  await w.deps.events.stop(); // hands in the buffered impressions, flushes the log

  const body = await (await w.app.request("/v1/analytics/articles?limit=100", { headers: bearer(a.key) })).json();
  const seen: ArticleRow[] = body.articles.filter((r: ArticleRow) => r.impressions > 0);
  assert.deepEqual(seen.map((r) => r.title).sort(), [...shown].sort());
  assert.ok(seen.every((r) => r.impressions === 1));
  assert.ok(!seen.some((r) => r.url === page.url), "the reader's own page was not shown to them");
});

Deno.test("POST /widget/v1/{wd}/recommend: articles for a reader already gone are shown to nobody, no impressions", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const page = a.articles.find((x) => x.title.startsWith("Council"))!;
  const gone = new AbortController();
  gone.abort();
  // The page closed (or the fetch aborted) before the articles came back.
  await w.app.request(`/widget/v1/${a.widget.id}/recommend`, {
    method: "POST",
    headers: { origin: ORIGIN, "content-type": "application/json" },
    body: JSON.stringify({ page_url: page.url, limit: 2 }),
    signal: gone.signal,
  });
  await w.deps.events.stop();
  const body = await (await w.app.request("/v1/analytics/articles?limit=100", { headers: bearer(a.key) })).json();
  assert.deepEqual(body.articles.filter((r: ArticleRow) => r.impressions > 0), []);
});
