import { z } from "zod";
import type { EmbeddingProvider } from "./provider.ts";
import { normalized } from "../index/vector_index.ts";

const responseSchema = z.object({
  data: z.array(z.object({ embedding: z.array(z.number()), index: z.number().int().min(0) })).min(1),
});

/** Settings of an OpenAI-compatible embeddings server. */
export interface OpenAiEmbeddingsOptions {
  /** Base URL up to and including the version, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  model: string;
  apiKey?: string;
  fetch?: typeof fetch;
  /** Inputs per request. */
  batchSize?: number;
  timeoutMs?: number;
}

/** Raised when the embeddings server fails or answers something unusable. */
export class EmbeddingsError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "EmbeddingsError";
  }
}

/**
 * Client for `POST {baseUrl}/embeddings` (OpenAI and compatible servers: vLLM, Ollama, LiteLLM).
 * Inputs are batched; vectors are returned in input order and L2-normalised.
 */
export class OpenAiEmbeddings implements EmbeddingProvider {
  readonly id: string;
  private dimensions = 0;
  private readonly options: OpenAiEmbeddingsOptions;

  constructor(options: OpenAiEmbeddingsOptions) {
    this.options = { ...options, baseUrl: options.baseUrl.replace(/\/+$/, "") };
    this.id = `openai:${options.model}`;
  }

  get dims(): number {
    return this.dimensions;
  }

  /** Learns the vector length with one probe call. */
  async init(): Promise<void> {
    if (this.dimensions === 0) await this.embed(["dimension probe"]);
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    const size = this.options.batchSize ?? 64;
    for (let i = 0; i < texts.length; i += size) out.push(...await this.batch(texts.slice(i, i + size)));
    return out;
  }

  private async batch(input: string[]): Promise<Float32Array[]> {
    // Servers reject empty strings; a blank text embeds as a single space.
    const body = JSON.stringify({ model: this.options.model, input: input.map((t) => t.slice(0, 8000) || " ") });
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    let res: Response;
    try {
      res = await (this.options.fetch ?? fetch)(`${this.options.baseUrl}/embeddings`, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
      });
    } catch (err) {
      throw new EmbeddingsError("embeddings server unreachable", { cause: err });
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new EmbeddingsError(`embeddings server answered ${res.status}`);
    }
    const parsed = responseSchema.safeParse(await res.json().catch(() => null));
    if (!parsed.success) throw new EmbeddingsError("embeddings server answered an unexpected body");
    const vectors: Float32Array[] = new Array(input.length);
    for (const item of parsed.data.data) {
      if (item.index >= input.length) throw new EmbeddingsError("embeddings server answered an unknown index");
      if (this.dimensions === 0) this.dimensions = item.embedding.length;
      if (item.embedding.length !== this.dimensions) {
        throw new EmbeddingsError(`embeddings server changed dimensions: ${item.embedding.length}`);
      }
      vectors[item.index] = normalized(item.embedding);
    }
    for (let i = 0; i < input.length; i++) {
      if (!vectors[i]) throw new EmbeddingsError("embeddings server left an input without a vector");
    }
    return vectors;
  }
}
