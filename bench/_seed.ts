/**
 * Writes prepared articles straight to KV, as the ingest path stores them (embedding, stored
 * terms, the URL key), 25 to an atomic commit: how the large benches seed millions of articles
 * without going through HTTP.
 */
import type { Clock } from "../core/clock.ts";
import { sha256Hex } from "../core/crypto.ts";
import { newId } from "../core/ids.ts";
import type { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { articleBag, storableTerms } from "../core/search/index/index.ts";
import { quantize } from "../core/search/index/vector_index.ts";
import { type Article, embeddingText, type normalizeArticle } from "../core/search/store/articles.ts";
import type { DataModel } from "../core/store/models.ts";

export async function writeArticles(
  kv: Deno.Kv,
  dm: DataModel,
  fields: ReturnType<typeof normalizeArticle>[],
  embeddings: LocalEmbeddings,
  clock: Clock,
): Promise<void> {
  let op = kv.atomic(), inOp = 0;
  for (const f of fields) {
    const { q, scale } = quantize(embeddings.embedOne(embeddingText(f)));
    const id = newId("ar", clock);
    const a: Article = {
      ...f,
      id,
      createdAt: clock.now().toISOString(),
      updatedAt: clock.now().toISOString(),
      embedding: { model: embeddings.id, dims: embeddings.dims, scale, q: new Uint8Array(q.buffer) },
      terms: storableTerms(f, articleBag(f)),
    };
    op.set(["article", dm.id, id], a).set(["article_url", dm.id, await sha256Hex(f.url)], id);
    if (++inOp === 25) {
      await op.commit();
      op = kv.atomic();
      inOp = 0;
    }
  }
  if (inOp) await op.commit();
}
