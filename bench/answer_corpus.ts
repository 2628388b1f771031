/**
 * Deterministic synthetic news articles for the answer-engine benches: realistic sentence
 * counts and lengths over a news vocabulary, so scoring and composition do real work.
 */
import type { RetrievedArticle } from "../core/search/types.ts";
import { prng } from "../fixtures/prng.ts";

const TOPICS = [
  ["city council", "budget", "vote", "property taxes", "pension costs"],
  ["transit authority", "bus fares", "subway line", "commuters", "service cuts"],
  ["school board", "teachers", "enrollment", "new curriculum", "test scores"],
  ["hospital", "emergency room", "nurses", "wait times", "flu season"],
  ["startup", "AI chip", "battery life", "investors", "phone makers"],
  ["storm", "snowfall", "power outages", "road crews", "flood warnings"],
  ["football club", "championship", "coach", "transfer window", "stadium"],
  ["housing market", "mortgage rates", "home prices", "rent increases", "new construction"],
  ["police department", "crime rates", "body cameras", "community patrols", "new chief"],
  ["airport", "runway expansion", "flight delays", "airlines", "noise complaints"],
];
const SUBJECTS = ["Officials", "The mayor", "Residents", "Analysts", "A spokesperson", "Critics", "The report"];
const VERBS = ["said", "announced", "warned", "confirmed", "estimated", "expected", "argued"];
const TIMES = ["on Monday", "last week", "this spring", "by the end of the year", "in January", "after the meeting"];
const SITES = [
  ["The Daily Ledger", "dailyledger.example"],
  ["Metro Wire", "metrowire.example"],
  ["Greenfield Gazette", "greenfieldgazette.example"],
  ["Circuit Review", "circuitreview.example"],
  ["Data Dispatch", "datadispatch.example"],
];

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

function sentence(r: () => number, topic: string[]): string {
  const a = pick(r, topic);
  const b = pick(r, topic);
  const n = Math.floor(r() * 900) + 10;
  return `${pick(r, SUBJECTS)} ${pick(r, VERBS)} that the ${a} would affect ${b} by ${n} units ${pick(r, TIMES)}.`;
}

/** Query strings about the corpus topics. */
export function benchQueries(): string[] {
  return TOPICS.flatMap((t) => [`What is happening with the ${t[1]}?`, `${t[0]} ${t[3]}`]);
}

/**
 * `count` articles of `sentences` sentences each (about 25 words a sentence), over `dataModelId`,
 * published within the 60 days before `now`.
 */
export function benchArticles(
  count: number,
  { seed = 42, sentences = 30, dataModelId = "dm_bench", now = new Date("2026-11-22T12:00:00Z") } = {},
): RetrievedArticle[] {
  const r = prng(seed);
  const out: RetrievedArticle[] = [];
  for (let i = 0; i < count; i++) {
    const topic = pick(r, TOPICS);
    const [site, domain] = pick(r, SITES);
    const pubdateUnix = Math.floor(now.getTime() / 1000 - r() * 60 * 86_400);
    const body: string[] = [];
    for (let s = 0; s < sentences; s++) body.push(sentence(r, topic));
    const paragraphs: string[] = [];
    for (let p = 0; p < body.length; p += 4) paragraphs.push(body.slice(p, p + 4).join(" "));
    out.push({
      id: `ar_bench_${i}`,
      dataModelId,
      url: `https://${domain}/news/${i}`,
      title: `${topic[0]![0]!.toUpperCase()}${topic[0]!.slice(1)}: ${topic[1]} and ${topic[2]}`,
      site,
      siteDomain: domain,
      pubdate: new Date(pubdateUnix * 1000).toISOString(),
      pubdateUnix,
      summary: body[0]!,
      body: paragraphs.join("\n\n"),
      score: 1 - i / count,
    });
  }
  return out;
}
