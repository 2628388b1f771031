/**
 * The KV write-ahead log of accepted events. A batch is stored as NDJSON chunks (UTF-8 bytes, each
 * under the 64 KiB KV value limit) at `["ev_wal", batchId, chunk]`, committed in as few atomic
 * operations as Deno KV allows (at most 1000 mutations and 800 KiB per commit), so a typical batch
 * is all-or-nothing. Entries leave the log only after their Parquet file is in place.
 *
 * Beside each chunk, in its commit, an index names the chunk under each tenant and minute of event
 * time it holds (`["ev_wal_ix", tenantId, minute, batchId, chunk]`), so the realtime read fetches the
 * chunks of one tenant's last minutes, not the whole log (every tenant's unflushed events). A record
 * beside the chunk (`["ev_wal_ixof", batchId, chunk]`) lists its entries, which leave with it.
 */
import { concatBytes } from "../core/bytes.ts";
import type { Clock } from "../core/clock.ts";

/** KV prefix of the log. */
export const WAL_PREFIX = ["ev_wal"] as const;

// The log's size, kept so it is read without a scan: bytes of chunks ever appended and ever flushed
// out, two KvU64 sums committed with the chunks they count (so exact, and shared by every process).
const SIZE_ADDED: Deno.KvKey = ["ev_wal_size", "added"];
const SIZE_REMOVED: Deno.KvKey = ["ev_wal_size", "removed"];
// Each tenant's part of that size, kept the same way: the bytes of its rows' lines ever appended and
// ever flushed out, so one tenant filling the log while its flush lags is refused before it fills it
// for every tenant. A chunk's record ({@link ChunkRecord}) says how many of its bytes each tenant's.
const tenantAdded = (tenantId: string): Deno.KvKey => ["ev_wal_tsize", tenantId, "added"];
const tenantRemoved = (tenantId: string): Deno.KvKey => ["ev_wal_tsize", tenantId, "removed"];

// The tenant and minute index of the chunks. An entry is of use while a realtime window (the last 30
// minutes) can still reach its minute; 5 minutes more cover processes' clocks apart, then it expires.
// A flush deletes a chunk's entries with the chunk, named by the chunk's record of them (left behind,
// they cost every realtime read of their minutes until they expired).
const INDEX_PREFIX = ["ev_wal_ix"] as const;
// A chunk's record of its index entries and its tenants' bytes, at `["ev_wal_ixof", batchId, chunk]`.
const INDEX_OF_PREFIX = ["ev_wal_ixof"] as const;

/**
 * A chunk's record: its index entries, `[tenantId, minute]`, the first of each tenant's carrying the
 * bytes of its lines the tenant's rows take as a third element (`[tenantId, -1, bytes]` for a tenant
 * with no entry: rows no realtime window reaches). An array of pairs and more, so a flusher of the
 * release before, which reads the pairs alone, deletes what it names during a rolling upgrade.
 * Chunks logged before tenants' bytes were kept have the pairs alone; for a while this session's
 * development stored `{ ix, bytes }`, read too.
 */
type ChunkRecord = [string, number, number?][] | { ix: [string, number][]; bytes: [string, number][] };
// The minute of a record's element that names a tenant's bytes and no index entry.
const NO_ENTRY = -1;

/** A record's index entries and its tenants' bytes, whichever shape it was stored in. */
function readRecord(record: ChunkRecord): { ix: [string, number][]; bytes: [string, number][] } {
  if (!Array.isArray(record)) return record;
  return {
    ix: record.filter(([, minute]) => minute !== NO_ENTRY).map(([t, m]) => [t, m]),
    bytes: record.flatMap(([t, , b]) => b === undefined ? [] : [[t, b] as [string, number]]),
  };
}

/** The record of a chunk with these index entries (`[tenantId, minute]`) and tenants' bytes. */
function chunkRecord(ix: [string, number][], bytes: [string, number][]): ChunkRecord {
  const left = new Map(bytes);
  const out: [string, number, number?][] = ix.map(([t, m]) => {
    const b = left.get(t);
    left.delete(t);
    return b === undefined ? [t, m] : [t, m, b];
  });
  for (const [t, b] of left) out.push([t, NO_ENTRY, b]);
  return out;
}
const MINUTE_MS = 60_000;
const INDEX_REACH_MS = 35 * MINUTE_MS;

/** What the index needs of a logged row (an EventRow has it). */
export interface WalRowTag {
  tenant_id: string | null;
  ts_ms: number;
}

/** Largest chunk value in bytes (KV allows 65,536 per value; keep room for the serialisation header). */
export const CHUNK_BYTES = 63_000;
// Deno KV: at most 1000 mutations and 800 KiB of keys+values per atomic commit. Stay under both.
const COMMIT_BYTES = 760_000;
const COMMIT_MUTATIONS = 900;
// Deno KV: at most 80 KiB (81,920 bytes) of keys per atomic commit, the keys it checks counted too.
const COMMIT_KEY_BYTES = 76_000;
// Deno KV: at most 100 checks per atomic commit; room is left for the callers' own (a plan's, a lease's).
const COMMIT_CHECKS = 90;

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
  return concatBytes(parts);
}

/**
 * Whether a row's NDJSON line fits one chunk. The fields' character limits do not bound it: JSON
 * writes a control character as 6 bytes, so validation checks this too.
 */
export function fitsChunk(line: Uint8Array): boolean {
  return line.byteLength <= CHUNK_BYTES;
}

/**
 * Packs NDJSON lines ({@link ndjsonLine}) into chunks of at most {@link CHUNK_BYTES} bytes (validation
 * refused a longer line, {@link fitsChunk}), each with the range of `lines` it holds (`first` to
 * before `end`).
 */
function packChunks(lines: Uint8Array[]): { bytes: Uint8Array; first: number; end: number }[] {
  const out: { bytes: Uint8Array; first: number; end: number }[] = [];
  let parts: Uint8Array[] = [];
  let size = 0;
  const close = (end: number) => {
    if (!parts.length) return;
    const buf = new Uint8Array(size);
    let at = 0;
    for (const p of parts) {
      buf.set(p, at);
      at += p.byteLength;
    }
    out.push({ bytes: buf, first: end - parts.length, end });
    parts = [];
    size = 0;
  };
  for (const [i, line] of lines.entries()) {
    if (size + line.byteLength > CHUNK_BYTES) close(i);
    parts.push(line);
    size += line.byteLength;
  }
  close(lines.length);
  return out;
}

/**
 * The index entries of one chunk: one per tenant and minute of its rows that a realtime window can
 * still reach, with how long until none can.
 */
function indexEntries(
  batchId: string,
  chunk: number,
  rows: readonly WalRowTag[],
  nowMs: number,
): { key: Deno.KvKey; expireIn: number }[] {
  const out = new Map<string, { key: Deno.KvKey; expireIn: number }>();
  for (const r of rows) {
    if (!r.tenant_id) continue;
    const minute = Math.floor(r.ts_ms / MINUTE_MS);
    const expireIn = (minute + 1) * MINUTE_MS + INDEX_REACH_MS - nowMs;
    const id = `${minute} ${r.tenant_id}`;
    if (expireIn <= 0 || out.has(id)) continue;
    out.set(id, { key: [...INDEX_PREFIX, r.tenant_id, minute, batchId, chunk], expireIn });
  }
  return [...out.values()];
}

/** The bytes of the lines `first` to before `end` each tenant's rows take (rows of no tenant count for none). */
function tenantBytes(
  lines: readonly Uint8Array[],
  rows: readonly WalRowTag[],
  first: number,
  end: number,
): [string, number][] {
  const out = new Map<string, number>();
  for (let i = first; i < end; i++) {
    const tenantId = rows[i]!.tenant_id;
    if (tenantId) out.set(tenantId, (out.get(tenantId) ?? 0) + lines[i]!.byteLength);
  }
  return [...out];
}

/**
 * An upper bound of what a KV write of `value` at `key` adds to a commit's size: KV stores values
 * in V8's serialisation, at most 2 bytes a character of their JSON (a two-byte string), and the
 * key's parts. A session state is about 200 to 900 bytes; a flat guess under-counted 500 of them
 * and the commit went over KV's 800 KiB.
 */
function entryBytes(key: Deno.KvKey, value: unknown): number {
  return keyBytes(key) + 2 * (JSON.stringify(value) ?? "").length + 64;
}

/** An upper bound of `key`'s encoded size (what KV's limit on a commit's keys counts). */
function keyBytes(key: Deno.KvKey): number {
  return key.reduce<number>((n, p) => n + (typeof p === "string" ? enc.encode(p).byteLength : 16) + 2, 0);
}

/** Append, read and delete over the KV log. */
export class EventWal {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  /**
   * Durably appends a batch, its rows as {@link ndjsonLine} encoded them. Resolves only once every
   * chunk is committed, each with its index entries.
   * @param rows the rows of `lines`, in the same order (their tenant and time, for the index).
   * @param extra writes that commit together with the first group of chunks.
   * @returns false, with nothing stored, when an extra write's versionstamp check failed.
   */
  async append(
    batchId: string,
    lines: Uint8Array[],
    rows: readonly WalRowTag[],
    extra: WalExtraSet[] = [],
  ): Promise<boolean> {
    if (rows.length !== lines.length) throw new Error("every logged line needs its row");
    const chunks = packChunks(lines);
    const nowMs = this.clock.now().getTime();
    let op = this.kv.atomic();
    let bytes = 0;
    let mutations = 0;
    let keys = 0;
    let checked = false;
    // Chunk bytes gathered in `op`, and each tenant's part of them: the log's size, and the
    // tenants' parts, grow by them in the same commit.
    let logged = 0;
    let loggedBy = new Map<string, number>();
    const counted = () => {
      if (logged) op = op.sum(SIZE_ADDED, BigInt(logged));
      for (const [tenantId, n] of loggedBy) op = op.sum(tenantAdded(tenantId), BigInt(n));
      return op;
    };
    /** Commits what is gathered; false when a version check failed (then nothing of the batch is stored). */
    const commit = async (): Promise<boolean> => {
      if (checked && !(await counted().commit()).ok) return false;
      if (!checked) await this.#commit(counted());
      checked = false;
      op = this.kv.atomic();
      bytes = 0;
      mutations = 0;
      keys = 0;
      logged = 0;
      loggedBy = new Map();
      return true;
    };
    // A batch's session keys alone may pass KV's limit on keys (500 session ids of 128 characters).
    const full = (size: number, n: number, keySize: number) =>
      mutations > 0 &&
      (bytes + size > COMMIT_BYTES || mutations + n > COMMIT_MUTATIONS || keys + keySize > COMMIT_KEY_BYTES);
    for (const x of extra) {
      const size = entryBytes(x.key, x.value);
      // A checked key counts twice (its check and its write).
      const keySize = keyBytes(x.key) * (x.versionstamp !== undefined ? 2 : 1);
      // Checked writes stay together in the first commit (they are few, at most 100 states of
      // short keys); unchecked ones may fill several.
      if (!checked && full(size, 1, keySize)) await commit();
      if (x.versionstamp !== undefined) {
        op = op.check({ key: x.key, versionstamp: x.versionstamp });
        checked = true;
      }
      op = op.set(x.key, x.value, x.expireIn ? { expireIn: x.expireIn } : undefined);
      mutations++;
      bytes += size;
      keys += keySize;
    }
    for (const [i, chunk] of chunks.entries()) {
      const index = indexEntries(batchId, i, rows.slice(chunk.first, chunk.end), nowMs);
      const byTenant = tenantBytes(lines, rows, chunk.first, chunk.end);
      const kept = index.length > 0 || byTenant.length > 0;
      const record = chunkRecord(index.map((x) => x.key.slice(1, 3) as [string, number]), byTenant);
      const recordKey = [...INDEX_OF_PREFIX, batchId, i];
      // Each tenant's sum counted as if new to the commit (an upper bound).
      const sums = byTenant.reduce((n, [t]) => n + entryBytes(tenantAdded(t), 0), 0);
      const size = chunk.bytes.byteLength + 100 + index.reduce((n, x) => n + entryBytes(x.key, 1), 0) +
        (kept ? entryBytes(recordKey, record) : 0) + sums;
      const n = 1 + index.length + (kept ? 1 : 0) + byTenant.length;
      const chunkKey = [...WAL_PREFIX, batchId, i];
      const keySize = keyBytes(chunkKey) + index.reduce((k, x) => k + keyBytes(x.key), 0) +
        (kept ? keyBytes(recordKey) : 0) + byTenant.reduce((k, [t]) => k + keyBytes(tenantAdded(t)), 0);
      if (full(size, n, keySize) && !(await commit())) return false;
      op = op.set(chunkKey, chunk.bytes);
      for (const x of index) op = op.set(x.key, 1, { expireIn: x.expireIn });
      if (kept) op = op.set(recordKey, record);
      bytes += size;
      mutations += n;
      keys += keySize;
      logged += chunk.bytes.byteLength;
      for (const [t, b] of byTenant) loggedBy.set(t, (loggedBy.get(t) ?? 0) + b);
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
    return (await this.sizes([])).total;
  }

  /**
   * The log's kept size ({@link size}) and the parts of it `tenantIds` take, in one KV read for up
   * to four tenants.
   */
  async sizes(tenantIds: readonly string[]): Promise<{ total: number; byTenant: Map<string, number> }> {
    const keys = [SIZE_ADDED, SIZE_REMOVED, ...tenantIds.flatMap((t) => [tenantAdded(t), tenantRemoved(t)])];
    const got: Deno.KvEntryMaybe<Deno.KvU64>[] = [];
    // At most 10 keys a read (KV's getMany limit).
    for (let i = 0; i < keys.length; i += 10) got.push(...await this.kv.getMany<Deno.KvU64[]>(keys.slice(i, i + 10)));
    const left = (i: number) => {
      const n = (got[i]!.value?.value ?? 0n) - (got[i + 1]!.value?.value ?? 0n);
      return n > 0n ? Number(n) : 0;
    };
    return { total: left(0), byTenant: new Map(tenantIds.map((t, i) => [t, left(2 + 2 * i)])) };
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

  /**
   * The chunks still in the log holding a row of `tenantId` timed from `fromMs` to `toMs` (within the
   * last 30 minutes; the index reaches no further), found through the index: the read grows with
   * the tenant's own unflushed events, not with the log (a flush deletes its chunks' entries). The
   * chunks may hold other rows too (the tenant's of other minutes, other tenants' of a mixed service
   * batch): callers filter rows.
   */
  async *tenantChunks(tenantId: string, fromMs: number, toMs: number): AsyncGenerator<WalChunk> {
    const keys = new Map<string, Deno.KvKey>();
    const range = {
      start: [...INDEX_PREFIX, tenantId, Math.floor(fromMs / MINUTE_MS)],
      end: [...INDEX_PREFIX, tenantId, Math.floor(toMs / MINUTE_MS) + 1],
    };
    for await (const e of this.kv.list(range)) {
      const [batchId, chunk] = e.key.slice(3);
      keys.set(`${String(batchId)}/${String(chunk)}`, [...WAL_PREFIX, batchId!, chunk!]);
    }
    // At most 10 keys a read (KV's getMany limit).
    const wanted = [...keys.values()];
    for (let i = 0; i < wanted.length; i += 10) {
      for (const e of await this.kv.getMany<Uint8Array[]>(wanted.slice(i, i + 10))) {
        if (e.value) yield { key: e.key, bytes: e.value }; // gone: flushed since the index was listed
      }
    }
  }

  /** Whether the log holds anything. */
  async isEmpty(): Promise<boolean> {
    return (await this.take(1)).length === 0;
  }

  /**
   * Deletes chunks, each with its index entries and its record of them, in commits under KV's
   * mutation limit; `last`, and the log's size shrinking by `bytes` (the chunks' total), join the
   * final commit. A chunk's record leaves in the commit that takes its tenants' bytes off their parts
   * of the size, checked at the version read, so each is taken off once whatever else deletes it
   * meanwhile; with `guard` (a check of the plan being carried out) every commit is made only while
   * it holds, and `last` (which deletes the plan) lets one caller take `bytes` off the log's size.
   * @returns false when a check `guard` or `last` added failed: then the size is left as it was
   *   (what earlier commits deleted, and took off, is gone).
   */
  async delete(
    keys: Deno.KvKey[],
    bytes: number,
    last?: (op: Deno.AtomicOperation) => Deno.AtomicOperation,
    guard: (op: Deno.AtomicOperation) => Deno.AtomicOperation = (op) => op,
  ): Promise<boolean> {
    // Deletes in order; a record's deletion carries its tenants' bytes, which join the same commit,
    // checked at the version read: two flushers deleting one plan (one stalled past its lease, one
    // that recovered the plan) may both pass the plan's check until its last commit, and the record,
    // written once and deleted once, lets only one of them take its bytes off.
    type Step = { key: Deno.KvKey; tenants?: [string, number][]; versionstamp?: string };
    const steps: Step[] = [];
    for (let i = 0; i < keys.length; i += 10) {
      const records = keys.slice(i, i + 10).map((k) => [...INDEX_OF_PREFIX, ...k.slice(WAL_PREFIX.length)]);
      const got = await this.kv.getMany<ChunkRecord[]>(records);
      for (const [j, k] of keys.slice(i, i + 10).entries()) {
        steps.push({ key: k });
        const record = got[j]!;
        if (!record.value) continue; // a chunk logged before records were kept: its entries expire
        const { ix, bytes: tenants } = readRecord(record.value);
        const tail = k.slice(WAL_PREFIX.length);
        for (const [tenantId, minute] of ix) steps.push({ key: [...INDEX_PREFIX, tenantId, minute, ...tail] });
        steps.push({
          key: record.key,
          tenants,
          versionstamp: record.versionstamp,
        });
      }
    }
    let op = this.kv.atomic();
    let mutations = 0;
    let keyBytesIn = 0;
    let checks = 0;
    let removedBy = new Map<string, number>();
    const finish = (o: Deno.AtomicOperation) => {
      for (const [tenantId, n] of removedBy) o = o.sum(tenantRemoved(tenantId), BigInt(n));
      return guard(o);
    };
    // The mutations and key bytes `step` adds: its delete (and check), and a sum for each tenant new to the commit.
    const cost = (step: Step) => {
      const added = (step.tenants ?? []).filter(([t]) => !removedBy.has(t));
      const checked = step.versionstamp !== undefined ? 2 : 1;
      return {
        n: 1 + added.length,
        k: keyBytes(step.key) * checked + added.reduce((x, [t]) => x + keyBytes(tenantRemoved(t)), 0),
      };
    };
    for (const step of steps) {
      const tenants = step.tenants ?? [];
      let { n, k } = cost(step);
      const check = step.versionstamp !== undefined ? 1 : 0;
      if (
        mutations > 0 &&
        (mutations + n > COMMIT_MUTATIONS || keyBytesIn + k > COMMIT_KEY_BYTES || checks + check > COMMIT_CHECKS)
      ) {
        if (!(await finish(op).commit()).ok) return false;
        op = this.kv.atomic();
        mutations = 0;
        keyBytesIn = 0;
        checks = 0;
        removedBy = new Map();
        ({ n, k } = cost(step));
      }
      if (step.versionstamp !== undefined) op = op.check({ key: step.key, versionstamp: step.versionstamp });
      op = op.delete(step.key);
      for (const [t, b] of tenants) removedBy.set(t, (removedBy.get(t) ?? 0) + b);
      mutations += n;
      keyBytesIn += k;
      checks += check;
    }
    op = finish(op);
    if (bytes > 0) op = op.sum(SIZE_REMOVED, BigInt(bytes));
    if (last) op = last(op);
    return (await op.commit()).ok;
  }
}
