/**
 * Vectors as the search room stores and embeds them: int8 in KV (what every process's index
 * holds), and embedding that never fails a write or a search (articles stay searchable lexically).
 */
import { describeError, type Logger } from "../log.ts";
import type { EmbeddingProvider } from "./embeddings/provider.ts";
import type { StoredEmbedding } from "./store/articles.ts";
import { dequantize, quantize } from "./index/vector_index.ts";

/** Embeds texts, or answers null when the provider fails (logged). */
export type EmbedSafely = (texts: string[]) => Promise<Float32Array[] | null>;

/** A vector in its stored form (int8 with a scale). */
export function toStored(model: string, v: Float32Array): StoredEmbedding {
  const { q, scale } = quantize(v);
  return { model, dims: v.length, scale, q: new Uint8Array(q.buffer, q.byteOffset, q.byteLength) };
}

/** A stored vector as the index holds it. */
export function fromStored(e: StoredEmbedding): Float32Array {
  return dequantize(new Int8Array(e.q.buffer, e.q.byteOffset, e.q.byteLength), e.scale);
}

/** The provider's `embed`, answering null instead of failing. */
export function embedSafely(provider: EmbeddingProvider, log: Logger): EmbedSafely {
  return async (texts) => {
    if (texts.length === 0) return [];
    try {
      return await provider.embed(texts);
    } catch (err) {
      // Articles stay searchable lexically; the next start embeds them again.
      log.warn("embedding failed; indexing without vectors", { error: describeError(err) });
      return null;
    }
  };
}
