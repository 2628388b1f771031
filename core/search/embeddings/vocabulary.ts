/**
 * Word -> row over a word-vector cache's vocabulary bytes (UTF-8 words joined by `\n`, in row
 * order), built without a string per word: an open-addressing table of FNV-1a hashes over the
 * bytes. Building a `Map` of the 341k words cost about 0.2 s of CPU at every start; this costs a
 * pass over the bytes. Words looked up are remembered (a bounded memo), so the hot vocabulary of a
 * corpus is looked up at `Map` speed.
 */
export class VocabularyIndex {
  /** Distinct words (a repeated word keeps its first row, as a `Map` built in row order would). */
  readonly size: number;
  readonly #bytes: Uint8Array;
  /** Row r spans bytes [starts[r], starts[r + 1] - 1): the `\n` after it excluded. */
  readonly #starts: Uint32Array;
  readonly #table: Int32Array;
  readonly #mask: number;
  /** Rows that repeat an earlier row's word. */
  readonly #repeat: Uint8Array;
  /** Bytes of the longest word: a longer word is a miss without a look (and is not remembered). */
  readonly #longest: number;
  readonly #memo = new Map<string, number>();
  readonly #encoder = new TextEncoder();
  #scratch = new Uint8Array(64);

  /** Most words remembered before the memo starts over (bounds its memory). */
  static readonly MEMO_LIMIT = 200_000;

  constructor(bytes: Uint8Array, rows: number) {
    this.#bytes = bytes;
    const starts = new Uint32Array(rows + 1);
    let row = 1;
    for (let i = 0; i < bytes.length && row < rows; i++) if (bytes[i] === 10) starts[row++] = i + 1;
    if (rows > 0 && row !== rows) throw new Error("word-vector cache vocabulary does not hold one word per row");
    starts[rows] = bytes.length + 1;
    this.#starts = starts;
    let capacity = 16;
    while (capacity < rows * 2) capacity *= 2;
    this.#mask = capacity - 1;
    this.#table = new Int32Array(capacity).fill(-1);
    this.#repeat = new Uint8Array(rows);
    let distinct = 0, longest = 0;
    for (let r = 0; r < rows; r++) {
      const from = starts[r]!, to = starts[r + 1]! - 1;
      longest = Math.max(longest, to - from);
      let slot = fnv1a(bytes, from, to) & this.#mask;
      let repeated = false;
      for (let at = this.#table[slot]!; at !== -1; at = this.#table[slot]!) {
        if (this.#sameBytes(at, bytes, from, to)) {
          repeated = true;
          break;
        }
        slot = (slot + 1) & this.#mask;
      }
      if (repeated) {
        this.#repeat[r] = 1;
        continue;
      }
      this.#table[slot] = r;
      distinct++;
    }
    this.size = distinct;
    this.#longest = longest;
  }

  /** The row of `word`, or undefined. */
  get(word: string): number | undefined {
    // UTF-8 takes at least one byte per UTF-16 unit.
    if (word.length > this.#longest) return undefined;
    const known = this.#memo.get(word);
    if (known !== undefined) return known < 0 ? undefined : known;
    const row = this.#find(word);
    if (this.#memo.size >= VocabularyIndex.MEMO_LIMIT) this.#memo.clear();
    this.#memo.set(word, row ?? -1);
    return row;
  }

  has(word: string): boolean {
    return this.get(word) !== undefined;
  }

  /** The distinct words in row order. */
  *keys(): Generator<string> {
    const decoder = new TextDecoder();
    for (let r = 0; r + 1 < this.#starts.length; r++) {
      if (!this.#repeat[r]) yield decoder.decode(this.#bytes.subarray(this.#starts[r]!, this.#starts[r + 1]! - 1));
    }
  }

  #find(word: string): number | undefined {
    if (this.#scratch.length < word.length * 3) this.#scratch = new Uint8Array(word.length * 3);
    const { written } = this.#encoder.encodeInto(word, this.#scratch);
    const key = this.#scratch;
    let slot = fnv1a(key, 0, written) & this.#mask;
    for (let at = this.#table[slot]!; at !== -1; at = this.#table[slot]!) {
      if (this.#sameBytes(at, key, 0, written)) return at;
      slot = (slot + 1) & this.#mask;
    }
    return undefined;
  }

  /** Whether row `row`'s word is the bytes `other[from, to)`. */
  #sameBytes(row: number, other: Uint8Array, from: number, to: number): boolean {
    const start = this.#starts[row]!, end = this.#starts[row + 1]! - 1;
    if (end - start !== to - from) return false;
    const bytes = this.#bytes;
    for (let i = 0; i < to - from; i++) if (bytes[start + i] !== other[from + i]) return false;
    return true;
  }
}

/** 32-bit FNV-1a over `bytes[from, to)`. */
function fnv1a(bytes: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}
