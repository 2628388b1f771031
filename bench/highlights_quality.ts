/**
 * How well the top highlight answers the question (docs/relevance.md, "Highlights").
 *
 * 1. Demo pairs: hand-written questions about the demo newsroom stories (fixtures/demo_newsroom.ts),
 *    each with the sentence that answers it. hit@1: the top highlight of the story (one passage,
 *    160 characters) holds that sentence. Baseline: the story's opening passage.
 * 2. CISI (fixtures/beir/cisi): passages carry the document's relevance. The 100 best BM25
 *    documents of each query are ranked by the score of their top highlight alone (300
 *    characters, MaxP); nDCG@10 against the judgments. Baseline: the opening passage's score.
 *    Variants: terms only, and terms blended with the passage's cosine (weights 0.3, 0.6).
 *
 * Run: deno run --allow-read --allow-write --allow-env bench/highlights_quality.ts
 */
import { defaultCacheName, LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { loadBeir, ndcgAt } from "../cli/eval.ts";
import { Bm25Index } from "../core/search/index/bm25.ts";
import { highlightPage, highlightQueryOfText, shortlistWindows } from "../core/search/rank/highlights.ts";
import { terms } from "../core/search/text/tokenizer.ts";
import { NEWSROOM_STORIES } from "../fixtures/demo_newsroom.ts";

const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? `/tmp/svc-test-shared/${defaultCacheName()}`;

/** [question, story slug, the answering sentence's start]. */
const PAIRS: [string, string, string][] = [
  ["How much will the footbridge cost?", "council-approves-riverside-footbridge", "The footbridge will cost 4.2"],
  ["When does construction of the footbridge start?", "council-approves-riverside-footbridge", "Construction is due"],
  ["How much time will the bridge save walkers?", "council-approves-riverside-footbridge", "Councillor Amira Haddad"],
  ["How much money goes to fixing potholes?", "council-budget-vote-freezes-parking-fees", "The budget also sets"],
  ["What did the opposition say about the parking freeze?", "council-budget-vote-freezes-parking-fees", "Opposition"],
  ["What are the library's new opening hours?", "central-library-reopens-after-renovation", "Opening hours will"],
  ["How much did the library renovation cost?", "central-library-reopens-after-renovation", "The renovation cost"],
  ["When will ferry sailings restart?", "ferry-service-suspended-engine-fault", "A replacement boat"],
  ["How can islanders get to medical appointments?", "ferry-service-suspended-engine-fault", "Islanders needing"],
  ["Why did Voltcycle choose the airfield site?", "battery-factory-350-jobs", "The company chose"],
  ["How many apprentices will the battery factory train?", "battery-factory-350-jobs", "Training places"],
  ["Where is the national robotics final?", "robotics-contest-northgate-academy", "The team of six"],
  ["Which way are buses diverted during the Mill Road repairs?", "mill-road-water-main-repairs", "Until then"],
  ["What did the new police chief do before?", "new-police-chief-named", "She served twelve"],
  ["When was power restored after the outage?", "storm-power-outage-fallen-tree", "Power was restored"],
  ["Do children pay for the bus?", "bus-fares-rise-january", "Monthly passes"],
  ["Will patients still travel to the capital for radiotherapy?", "hospital-announces-cancer-wing", "Patients who"],
];

const embeddings = new LocalEmbeddings({ cachePath });
// How far below the best window by terms a window is still embedded (HIGHLIGHT_MARGIN to compare).
const MARGIN = Number(Deno.env.get("HIGHLIGHT_MARGIN") ?? 0.1);
await embeddings.init();

/** idf over a collection of texts. */
function idfOf(texts: string[]): (t: string) => number {
  const df = new Map<string, number>();
  for (const text of texts) for (const t of new Set(terms(text))) df.set(t, (df.get(t) ?? 0) + 1);
  const n = texts.length;
  return (t) => Math.log(1 + (n - (df.get(t) ?? 0) + 0.5) / ((df.get(t) ?? 0) + 0.5));
}

/** The top highlight (the service's path: one page, shortlisted windows embedded) under a vector weight. */
async function topPassage(
  body: string,
  question: string,
  idf: (t: string) => number,
  maxCharacters: number,
  weight: number,
): Promise<{ text: string; score: number }> {
  const q = highlightQueryOfText(question, idf);
  const [queryVector] = await embeddings.embed([question]);
  const [picked] = await highlightPage([body], q, { maxCharacters, perResult: 1 }, {
    queryVector: weight > 0 ? queryVector : null,
    embed: (texts) => embeddings.embed(texts),
    vectorWeight: weight,
    margin: MARGIN,
  });
  return picked![0] ?? { text: "", score: 0 };
}

/** The opening window's score (the baseline a fixed preview gives). */
function leadPassage(body: string, question: string, idf: (t: string) => number, maxCharacters: number) {
  const q = highlightQueryOfText(question, idf);
  const all = shortlistWindows(body, q, { maxCharacters, perResult: 1 }, new Map(), Infinity);
  return { score: all.find((w) => w.from === 0)?.lexical ?? 0 };
}

// 1. Demo pairs.
const stories = new Map(NEWSROOM_STORIES.map((s) => [s.slug, s.body.join("\n\n")]));
const demoIdf = idfOf([...stories.values()]);
const demo: Record<string, number> = { lead: 0, terms: 0, "terms+vector 0.3": 0, "terms+vector 0.6": 0 };
for (const [question, slug, answer] of PAIRS) {
  const body = stories.get(slug)!;
  const lead = body.split("\n\n")[0]!;
  if (lead.startsWith(answer)) demo.lead!++;
  for (const [name, w] of [["terms", 0], ["terms+vector 0.3", 0.3], ["terms+vector 0.6", 0.6]] as const) {
    const top = await topPassage(body, question, demoIdf, 160, w);
    if (top.text.startsWith(answer) || top.text.includes(answer)) demo[name]!++;
  }
}
console.log(`Demo pairs (${PAIRS.length}), hit@1 of the top highlight (160 characters):`);
for (const [k, v] of Object.entries(demo)) console.log(`  ${k.padEnd(18)} ${(v / PAIRS.length).toFixed(3)}`);

// 2. CISI.
const data = await loadBeir(new URL("../fixtures/beir/cisi", import.meta.url).pathname);
const docs = data.corpus.map((d) => `${d.title}. ${d.text}`);
const idf = idfOf(docs);
const bm25 = new Bm25Index();
docs.forEach((d, i) => bm25.add(i, Bm25Index.bag(terms(d))));
const variants = ["whole document (BM25)", "lead passage", "terms", "terms+vector 0.3", "terms+vector 0.6"] as const;
const totals = Object.fromEntries(variants.map((v) => [v, 0])) as Record<(typeof variants)[number], number>;
let n = 0;
for (const q of data.queries) {
  const rels = data.qrels.get(q.id);
  if (!rels) continue;
  n++;
  const scored = bm25.score(Bm25Index.bag(terms(q.text)));
  const order = [...scored.slots].map((s, i) => ({ s, score: scored.scores[i]! })).sort((a, b) => b.score - a.score)
    .slice(0, 100);
  totals["whole document (BM25)"] += ndcgAt(order.map((o) => data.corpus[o.s]!.id), rels, 10);
  const rankBy = async (f: (body: string) => Promise<number> | number) => {
    const withScore = await Promise.all(order.map(async (o) => ({ id: data.corpus[o.s]!.id, x: await f(docs[o.s]!) })));
    return withScore.sort((a, b) => b.x - a.x).map((e) => e.id);
  };
  totals["lead passage"] += ndcgAt(await rankBy((b) => leadPassage(b, q.text, idf, 300).score), rels, 10);
  totals.terms += ndcgAt(await rankBy(async (b) => (await topPassage(b, q.text, idf, 300, 0)).score), rels, 10);
  for (const [name, w] of [["terms+vector 0.3", 0.3], ["terms+vector 0.6", 0.6]] as const) {
    totals[name] += ndcgAt(await rankBy(async (b) => (await topPassage(b, q.text, idf, 300, w)).score), rels, 10);
  }
}
console.log(
  `\nCISI (${n} queries), nDCG@10 of the 100 best BM25 documents ranked by their top passage (300 characters):`,
);
for (const v of variants) console.log(`  ${v.padEnd(22)} ${(totals[v] / n).toFixed(4)}`);
