/**
 * The KV write-ahead log of accepted events. A batch is stored as NDJSON chunks (UTF-8 bytes, each
 * under the 64 KiB KV value limit) at `["ev_wal", batchId, chunk]`, committed in as few atomic
 * operations as Deno KV allows (at most 1000 mutations and 800 KiB per commit), so a typical batch
 * is all-or-nothing. Entries leave the log only after their Parquet file is in place.
 */

/** KV prefix of the log. */
export const WAL_PREFIX = ["ev_wal"] as const;

// The log's size, kept so it is read without a scan: bytes of chunks ever appended and ever flushed
// out, two KvU64 sums committed with the chunks they count (so exact, and shared by every process).
const SIZE_ADDED: Deno.KvKey = ["ev_wal_size", "added"];
const SIZE_REMOVED: Deno.KvKey = ["ev_wal_size", "removed"];

/** Largest chunk value in bytes (KV allows 65,536 per value; keep room for the serialisation header). */
export const CHUNK_BYTES = 63_000;
// Deno KV: at most 1000 mutations and 800 KiB of keys+values per atomic commit. Stay under both.
const COMMIT_BYTES = 760_000;
const COMMIT_MUTATIONS = 900;

/** An extra KV write that goes in with the batch (e.g. sponsored-session state). */
export interface WalExtraSet {
  key: Deno.KvKey;
  value: unknown;
  expireIn?: number;
  /** When set (null: the key must be absent), the batch commits only if the key is still at this version. */
  versionstamp?: string | null;
}

/** One stored chunk of the log. */
export interface WalChunk {
  key: Deno.KvKey;
  bytes: Uint8Array;
}

const enc = new TextEncoder();

// A lone surrogate (half of a pair; JSON lets a sender write "\ud800") becomes U+FFFD, as UTF-8
// encoding does: JSON.stringify would escape it, and DuckDB refuses such a line, so one event would
// stop every flush of the log.
const wellFormed = (_key: string, v: unknown) => typeof v === "string" ? v.toWellFormed() : v;

/**
 * A row as its NDJSON line (UTF-8, newline included): the bytes the log stores. Encoded once per
 * row; callers check the size of the line they then append.
 */
export function ndjsonLine(row: unknown): Uint8Array {
  return enc.encode(JSON.stringify(row, wellFormed) + "\n");
}

const dec = new TextDecoder();
// What JSON.stringify writes for a lone surrogate (a pair is written as itself, never escaped).
const ESCAPED_SURROGATE = /\\u[dD][89a-fA-F]/;

/**
 * A stored chunk as the flush may hand it to DuckDB: chunks logged before lines were written
 * well-formed may hold an escaped lone surrogate, which would fail every flush; those lines are
 * written again (the rest of the chunk, and every other chunk, is returned as it is).
 */
export function wellFormedChunk(bytes: Uint8Array): Uint8Array {
  const text = dec.decode(bytes);
  if (!ESCAPED_SURROGATE.test(text)) return bytes;
  const lines = text.split("\n").filter((l) => l !== "");
  const parts = lines.map((l) => ESCAPED_SURROGATE.test(l) ? ndjsonLine(JSON.parse(l)) : enc.encode(l + "\n"));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * Whether a row's NDJSON line fits one chunk. The fields' character limits do not bound it: JSON
 * writes a control character as 6 bytes, so validation checks this too.
 */
export function fitsChunk(line: Uint8Array): boolean {
  return line.byteLength <= CHUNK_BYTES;
}

/** Packs NDJSON lines ({@link ndjsonLine}) into chunks of at most {@link CHUNK_BYTES} bytes. */
export function toChunks(lines: Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let parts: Uint8Array[] = [];
  let size = 0;
  const close = () => {
    if (!parts.length) return;
    const buf = new Uint8Array(size);
    let at = 0;
    for (const p of parts) {
      buf.set(p, at);
      at += p.byteLength;
    }
    out.push(buf);
    parts = [];
    size = 0;
  };
  for (const line of lines) {
    if (!fitsChunk(line)) throw new Error(`event too large for the log: ${line.byteLength} bytes`);
    if (size + line.byteLength > CHUNK_BYTES) close();
    parts.push(line);
    size += line.byteLength;
  }
  close();
  return out;
}

/**
 * An upper bound of what a KV write of `value` at `key` adds to a commit's size: KV stores values
 * in V8's serialisation, at most 2 bytes a character of their JSON (a two-byte string), and the
 * key's parts. A session state is about 200 to 900 bytes; a flat guess under-counted 500 of them
 * and the commit went over KV's 800 KiB.
 */
function entryBytes(key: Deno.KvKey, value: unknown): number {
  const keyBytes = key.reduce<number>((n, p) => n + (typeof p === "string" ? enc.encode(p).byteLength : 16) + 2, 0);
  return keyBytes + 2 * (JSON.stringify(value) ?? "").length + 64;
}

/** Append, read and delete over the KV log. */
export class EventWal {
  constructor(private readonly kv: Deno.Kv) {}

  /**
   * Durably appends a batch, its rows as {@link ndjsonLine} encoded them. Resolves only once every
   * chunk is committed.
   * @param extra writes that commit together with the first group of chunks.
   * @returns false, with nothing stored, when an extra write's versionstamp check failed.
   */
  async append(batchId: string, lines: Uint8Array[], extra: WalExtraSet[] = []): Promise<boolean> {
    const chunks = toChunks(lines);
    let op = this.kv.atomic();
    let bytes = 0;
    let mutations = 0;
    let checked = false;
    // Chunk bytes gathered in `op`: the log's size grows by them in the same commit.
    let logged = 0;
    const counted = () => logged ? op.sum(SIZE_ADDED, BigInt(logged)) : op;
    /** Commits what is gathered; false when a version check failed (then nothing of the batch is stored). */
    const commit = async (): Promise<boolean> => {
      if (checked && !(await counted().commit()).ok) return false;
      if (!checked) await this.#commit(counted());
      checked = false;
      op = this.kv.atomic();
      bytes = 0;
      mutations = 0;
      logged = 0;
      return true;
    };
    const full = (size: number) => mutations > 0 && (bytes + size > COMMIT_BYTES || mutations + 1 > COMMIT_MUTATIONS);
    for (const x of extra) {
      const size = entryBytes(x.key, x.value);
      // Checked writes stay together in the first commit (they are few); unchecked ones may fill several.
      if (!checked && full(size)) await commit();
      if (x.versionstamp !== undefined) {
        op = op.check({ key: x.key, versionstamp: x.versionstamp });
        checked = true;
      }
      op = op.set(x.key, x.value, x.expireIn ? { expireIn: x.expireIn } : undefined);
      mutations++;
      bytes += size;
    }
    for (let i = 0; i < chunks.length; i++) {
      const size = chunks[i]!.byteLength + 100;
      if (full(size) && !(await commit())) return false;
      op = op.set([...WAL_PREFIX, batchId, i], chunks[i]!);
      bytes += size;
      mutations++;
      logged += chunks[i]!.byteLength;
    }
    if (checked) return (await counted().commit()).ok;
    if (mutations > 0) await this.#commit(counted());
    return true;
  }

  /**
   * Bytes of chunks in the log, from its kept size (two KV reads, no scan). Exact once every
   * process's appends have committed; chunks logged before the size was kept are not in it until
   * {@link settle} finds the log empty.
   */
  async size(): Promise<number> {
    const [added, removed] = await this.kv.getMany<[Deno.KvU64, Deno.KvU64]>([SIZE_ADDED, SIZE_REMOVED]);
    const n = (added.value?.value ?? 0n) - (removed.value?.value ?? 0n);
    return n > 0n ? Number(n) : 0;
  }

  /**
   * Sets the kept size back to zero when the log is empty but the size says otherwise (chunks or
   * flush plans from before it was kept). Called by the flusher once it has emptied the log; an
   * append meanwhile changes the size's version and leaves it as it is.
   */
  async settle(): Promise<void> {
    const [added, removed] = await this.kv.getMany<[Deno.KvU64, Deno.KvU64]>([SIZE_ADDED, SIZE_REMOVED]);
    if ((added.value?.value ?? 0n) === (removed.value?.value ?? 0n)) return;
    if (!(await this.isEmpty())) return;
    await this.kv.atomic().check(added, removed).delete(SIZE_ADDED).delete(SIZE_REMOVED).commit();
  }

  async #commit(op: Deno.AtomicOperation): Promise<void> {
    const res = await op.commit();
    if (!res.ok) throw new Error("event log commit failed");
  }

  /** The oldest chunks, up to `limit` (keys sort by batch id, a UUIDv7, so oldest first). */
  async take(limit: number): Promise<WalChunk[]> {
    const out: WalChunk[] = [];
    for await (const e of this.kv.list<Uint8Array>({ prefix: [...WAL_PREFIX] }, { limit })) {
      out.push({ key: e.key, bytes: e.value });
    }
    return out;
  }

  /** Every chunk in the log, oldest first (read only; for counting unflushed events). */
  async *scan(): AsyncGenerator<WalChunk> {
    for await (const e of this.kv.list<Uint8Array>({ prefix: [...WAL_PREFIX] })) yield { key: e.key, bytes: e.value };
  }

  /** Whether the log holds anything. */
  async isEmpty(): Promise<boolean> {
    return (await this.take(1)).length === 0;
  }

  /**
   * Deletes chunks, in commits under KV's mutation limit; `last`, and the log's size shrinking by
   * `bytes` (the chunks' total), join the final commit.
   */
  async delete(
    keys: Deno.KvKey[],
    bytes: number,
    last?: (op: Deno.AtomicOperation) => Deno.AtomicOperation,
  ): Promise<void> {
    for (let i = 0; i < keys.length || (i === 0 && last); i += COMMIT_MUTATIONS) {
      let op = this.kv.atomic();
      for (const k of keys.slice(i, i + COMMIT_MUTATIONS)) op = op.delete(k);
      if (i + COMMIT_MUTATIONS >= keys.length) {
        if (bytes > 0) op = op.sum(SIZE_REMOVED, BigInt(bytes));
        if (last) op = last(op);
      }
      await this.#commit(op);
      if (keys.length === 0) break;
    }
  }
}
