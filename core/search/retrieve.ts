/**
 * Retrieval for grounding an answer (answer engine, MCP, the widget's Ask AI): hybrid over one or
 * more data models, fused across indexes, recency-weighted, best first, with the article bodies.
 */
import type { Clock } from "../clock.ts";
import type { DataModel } from "../store/mod.ts";
import { liveSince } from "./store/retention.ts";
import type { DataModelIndex } from "./index/index.ts";
import { fuseAcrossIndexes } from "./rank/fusion.ts";
import { FUSION_V2 } from "./rank/retrieval_mode.ts";
import type { RetrievedArticle } from "./types.ts";
import type { EmbedSafely } from "./embed.ts";
import { queryRep } from "./query.ts";
import type { IndexRegistry } from "./registry.ts";

/** What retrieval is built from. */
export interface RetrieverOptions {
  clock: Clock;
  embed: EmbedSafely;
  /** Vector weight of the default ranking version. */
  vectorWeight: number;
  /**
   * A data model's record, for its retention (`maxAgeDays`): articles past it leave retrieval at
   * once, as they leave every search ranking, not only at the next sweep. Absent: no retention.
   */
  dataModel?: (id: string) => Promise<Pick<DataModel, "maxAgeDays"> | null>;
}

/** Retrieval over the indexes of a registry. */
export class Retriever {
  constructor(private readonly registry: IndexRegistry, private readonly options: RetrieverOptions) {}

  /** The best `k` articles (1 to 50; 5 by default) for `query` across `dataModelIds`. */
  async retrieve(dataModelIds: string[], query: string, options: { k?: number } = {}): Promise<RetrievedArticle[]> {
    const k = Math.max(1, Math.min(options.k ?? 5, 50));
    const nowUnix = Math.floor(this.options.clock.now().getTime() / 1000);
    const drawn: { dm: string; slot: number; score: number; bm25: number; cosine: number; index: DataModelIndex }[] =
      [];
    const contributing = new Set<string>();
    for (const dm of new Set(dataModelIds)) {
      const index = await this.registry.index(dm);
      if (index.size === 0) continue;
      const fusion = { ...FUSION_V2, vectorWeight: this.options.vectorWeight };
      const dataModel = await this.options.dataModel?.(dm);
      const since = dataModel ? liveSince(dataModel, this.options.clock) : undefined;
      const pub = index.pubdates;
      const allow = since === undefined ? undefined : (s: number) => pub[s]! >= since;
      const rep = await queryRep(index, query, this.options.embed, { fusion, pool: k * 3 });
      for (const c of index.hybrid(rep, { k: k * 3, fusion, allow })) {
        drawn.push({ dm, slot: c.slot, score: c.score, bm25: c.bm25, cosine: c.cosine, index });
        contributing.add(dm);
      }
    }
    // Per-index scores are normalised within their index: comparable only when one index answered.
    const scored = contributing.size > 1 ? fuseAcrossIndexes(drawn, this.options.vectorWeight) : drawn;
    const found = scored.map((f) => {
      // Recency weighting: a month-old article keeps ~84% of its relevance, a fresh one all of it.
      const ageDays = Math.max(0, (nowUnix - f.index.pubdates[f.slot]!) / 86_400);
      return { ...f, score: f.score * (0.75 + 0.25 * Math.exp(-ageDays / 30)) };
    });
    found.sort((a, b) => b.score - a.score);
    const out: RetrievedArticle[] = [];
    for (const f of found.slice(0, k)) {
      const card = f.index.cards[f.slot]!;
      const full = await this.registry.articles.get(f.dm, card.id);
      out.push({
        id: card.id,
        dataModelId: f.dm,
        url: card.url,
        title: card.title,
        author: card.author,
        site: card.site,
        siteDomain: card.siteDomain,
        pubdate: card.pubdate,
        pubdateUnix: card.pubdateUnix,
        summary: card.summary,
        body: full?.body ?? card.summary,
        score: Math.round(f.score * 10_000) / 10_000,
      });
    }
    return out;
  }
}
