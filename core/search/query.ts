/** Query text in the index's query form: the lexical bag of terms and the query vector. */
import { Bm25Index } from "./index/bm25.ts";
import type { DataModelIndex, QueryRep } from "./index/index.ts";
import type { Fusion } from "./rank/retrieval_mode.ts";
import { terms } from "./text/tokenizer.ts";
import type { EmbedSafely } from "./embed.ts";

const MAX_QUERY_CHARS = 2000;
// Terms of an analysed page used as the lexical query: enough to name the topic, few enough to stay fast.
const PAGE_QUERY_TERMS = 30;

/**
 * Turns query text into the index's query form; with a fusion that asks for it, the query
 * vector takes in the vectors of its best lexical matches (see {@link DataModelIndex.withFeedback}).
 */
export async function queryRep(
  index: DataModelIndex,
  text: string,
  embed: EmbedSafely,
  { page = false, fusion, pool }: { page?: boolean; fusion?: Fusion; pool?: number } = {},
): Promise<QueryRep> {
  const clipped = text.slice(0, page ? 20_000 : MAX_QUERY_CHARS);
  let bag = Bm25Index.bag(terms(clipped));
  if (page && bag.size > PAGE_QUERY_TERMS) {
    // A page is long: keep its most distinctive terms (tf x idf) as the lexical query.
    bag = new Map(
      [...bag].map(([t, tf]) => [t, tf * index.bm25.idf(t)] as const).sort((a, b) => b[1] - a[1])
        .slice(0, PAGE_QUERY_TERMS).map(([t]) => [t, 1]),
    );
  }
  const [vector] = (await embed([clipped.slice(0, 6000)])) ?? [null];
  const rep = { bag, vector: vector ?? null };
  if (!fusion) return rep;
  const expanded = index.withTermFeedback(rep, fusion.termFeedback, { pool });
  return index.withFeedback(expanded, fusion.feedbackDocs, fusion.feedbackWeight, { pool });
}
