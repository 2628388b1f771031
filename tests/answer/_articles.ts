/**
 * Hand-made articles, the shape the search engine ingests them in, and a small in-memory
 * retriever over them for the unit tests of the answer engine's parts (extraction, providers)
 * that should not depend on search ranking. `arrayRetriever` ranks by plain word overlap: it is a
 * test helper, not a search engine; the route tests retrieve through the real search engine.
 */
import type { RetrievedArticle } from "../../core/search/types.ts";
import type { Retrieve } from "../../core/answer/provider.ts";

/** 2026-11-22T12:00:00Z, the test worlds' fixed clock. */
export const NOW = new Date("2026-11-22T12:00:00Z");
const daysAgo = (d: number) => Math.floor(NOW.getTime() / 1000) - d * 86_400;

function article(
  id: string,
  dataModelId: string,
  site: string,
  siteDomain: string,
  ageDays: number,
  title: string,
  summary: string,
  body: string,
): RetrievedArticle {
  const pubdateUnix = daysAgo(ageDays);
  return {
    id,
    dataModelId,
    url: `https://${siteDomain}/news/${id}`,
    title,
    site,
    siteDomain,
    pubdate: new Date(pubdateUnix * 1000).toISOString(),
    pubdateUnix,
    summary,
    body,
    score: 0,
  };
}

/** Builds the fixture articles of two data models. */
export function fixtureArticles(dmNews: string, dmTech: string): RetrievedArticle[] {
  return [
    article(
      "ar_budget_new",
      dmNews,
      "The Daily Ledger",
      "dailyledger.example",
      1,
      "Council approves 2027 city budget after late-night vote",
      "The city council approved a 412 million dollar budget for 2027 on Friday.",
      "The city council approved a 412 million dollar budget for 2027 on Friday. The vote was 7 to 2 after a " +
        "five-hour debate. Mayor Ana Ruiz said the budget adds 40 new bus drivers and repairs three bridges.\n\n" +
        "Property taxes will stay flat for a second year. Two council members voted against the plan, citing " +
        "rising pension costs.",
    ),
    article(
      "ar_budget_old",
      dmNews,
      "Greenfield Gazette",
      "greenfieldgazette.example",
      60,
      "Budget talks begin at city hall",
      "City officials began talks on next year's budget.",
      "City officials began talks on next year's budget in September. The first draft proposed a 398 million " +
        "dollar budget. A public hearing is planned for October.",
    ),
    article(
      "ar_transit",
      dmNews,
      "Metro Wire",
      "metrowire.example",
      3,
      "Bus fares to rise in January",
      "The transit authority will raise bus fares by 25 cents.",
      "The transit authority will raise bus fares by 25 cents in January. A single ride will cost 2.75 dollars. " +
        "Monthly passes keep their current price. The agency said fuel and wage costs drove the increase.",
    ),
    article(
      "ar_chip",
      dmTech,
      "Circuit Review",
      "circuitreview.example",
      2,
      "Startup unveils low-power AI chip",
      "A Berlin startup unveiled a chip that runs language models on one watt.",
      "A Berlin startup unveiled a chip that runs language models on one watt. The company, Voltwerk, plans to " +
        "ship samples to phone makers in the spring. Analysts said the chip could extend battery life.",
    ),
    article(
      "ar_weather",
      dmNews,
      "Metro Wire",
      "metrowire.example",
      0,
      "Snow expected this weekend",
      "Forecasters expect up to 10 centimetres of snow on Saturday.",
      "Forecasters expect up to 10 centimetres of snow on Saturday. Road crews will salt main streets overnight.",
    ),
  ];
}

const wordsOf = (s: string) => new Set(s.toLowerCase().match(/[a-z0-9]+/g) ?? []);

/** Ranks `articles` of the asked data models by how many query words they share; best first. */
export function arrayRetriever(articles: RetrievedArticle[]): Retrieve & { calls: { ids: string[]; k?: number }[] } {
  const calls: { ids: string[]; k?: number }[] = [];
  const fn = (dataModelIds: string[], query: string, options?: { k?: number }) => {
    calls.push({ ids: dataModelIds, k: options?.k });
    const q = wordsOf(query);
    const ranked = articles
      .filter((a) => dataModelIds.includes(a.dataModelId))
      .map((a) => {
        const w = wordsOf(`${a.title} ${a.summary} ${a.body}`);
        let score = 0;
        for (const t of q) if (w.has(t)) score++;
        return { ...a, score };
      })
      .filter((a) => a.score > 0)
      .sort((a, b) => b.score - a.score || b.pubdateUnix - a.pubdateUnix || a.id.localeCompare(b.id));
    return Promise.resolve(ranked.slice(0, options?.k ?? 10));
  };
  return Object.assign(fn, { calls });
}

/** An article as the search engine's ingestion takes it. */
export function ingestItem(a: RetrievedArticle): Record<string, unknown> {
  return {
    url: a.url,
    title: a.title,
    site: a.site,
    site_domain: a.siteDomain,
    pubdate: a.pubdate,
    summary: a.summary,
    body: a.body,
  };
}
