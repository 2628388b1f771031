/**
 * The article change log of a data model, in Deno KV: how every process's in-memory index follows
 * the writes of the others without rebuilding.
 *
 * Keys: `["article_rev", dmId]` is the head, `{ seq, writer, at }`; `["article_change", dmId, seq]`
 * holds one change, `{ id, url, op, writer, at }`. Every article write or delete stages its
 * entries in the same atomic commit as the article, checked against the head it read and setting
 * the head to the last entry's number, so numbers are dense and commit in order: a reader that has
 * applied everything up to `seq` lists `(seq, head]` and misses nothing. Entries say only which
 * article changed; the reader fetches its current version (or finds it gone), so applying an entry
 * twice or late is harmless. The log is trimmed by age and length ({@link ArticleChangeLog.trim});
 * a reader whose position was trimmed away rebuilds its index from the articles.
 */

/** The head of a model's log, as stored. Older stores hold `{ writer, at }` only (seq 0). */
export interface ChangeLogHead {
  seq?: number;
  writer?: string;
  at?: number;
}

/** One logged change: the article `id` at `url` was written or deleted. */
export interface ArticleChange {
  seq: number;
  id: string;
  url: string;
  op: "upsert" | "delete";
  /** The engine that wrote it (readers skip their own changes: they applied them already). */
  writer: string;
  /** Milliseconds since the epoch by the writer's clock. */
  at: number;
}

/** A change as a writer stages it. */
export type ChangeToLog = Pick<ArticleChange, "id" | "url" | "op">;

/** Thrown by {@link ArticleChangeLog.since} when entries after the reader's position were trimmed. */
export class ChangeLogTrimmed extends Error {
  constructor() {
    super("the article change log no longer reaches back to this position");
    this.name = "ChangeLogTrimmed";
  }
}

export const headKey = (dmId: string): Deno.KvKey => ["article_rev", dmId];
const changeKey = (dmId: string, seq: number): Deno.KvKey => ["article_change", dmId, seq];

/** The sequence number of a head entry (0 for none or a head written before the log existed). */
export function headSeq(head: Deno.KvEntryMaybe<ChangeLogHead>): number {
  return head.value?.seq ?? 0;
}

/** How long and how many entries {@link ArticleChangeLog.trim} keeps. */
export interface ChangeLogRetention {
  /** Entries younger than this stay (a process that polls every few seconds needs far less). */
  maxAgeMs: number;
  /** At most this many of the newest entries stay. */
  maxEntries: number;
}

/** Default retention: an hour, at most 200,000 entries (about 20 MB) per data model. */
export const CHANGE_LOG_RETENTION: ChangeLogRetention = { maxAgeMs: 3_600_000, maxEntries: 200_000 };

/** Reads, appends to and trims the article change logs in one KV. */
export class ArticleChangeLog {
  constructor(private readonly kv: Deno.Kv) {}

  /** The head of a data model's log (its versionstamp is what appends check). */
  head(dmId: string): Promise<Deno.KvEntryMaybe<ChangeLogHead>> {
    return this.kv.get<ChangeLogHead>(headKey(dmId));
  }

  /**
   * Adds `changes` to an atomic operation that also writes them: checks that the head is still
   * `head`, writes one entry per change after it and moves the head to the last.
   * @returns the head as it will be once the operation commits (pass it with the commit's
   * versionstamp to the next {@link stage})
   */
  stage(
    op: Deno.AtomicOperation,
    dmId: string,
    head: Deno.KvEntryMaybe<ChangeLogHead>,
    changes: readonly ChangeToLog[],
    writer: string,
    at: number,
  ): ChangeLogHead {
    let seq = headSeq(head);
    op.check(head);
    for (const c of changes) {
      seq++;
      op.set(changeKey(dmId, seq), { id: c.id, url: c.url, op: c.op, writer, at });
    }
    const next = { seq, writer, at };
    op.set(headKey(dmId), next);
    return next;
  }

  /**
   * The entries after `seq` up to `upTo`, in order, a page at a time.
   * @throws {ChangeLogTrimmed} when some of them are no longer in the log
   */
  async *since(dmId: string, seq: number, upTo: number, pageSize = 1000): AsyncGenerator<ArticleChange[]> {
    let expected = seq + 1;
    let page: ArticleChange[] = [];
    const iter = this.kv.list<Omit<ArticleChange, "seq">>(
      { start: changeKey(dmId, seq + 1), end: changeKey(dmId, upTo + 1) },
      { batchSize: pageSize },
    );
    for await (const e of iter) {
      const n = e.key[2] as number;
      if (n !== expected) throw new ChangeLogTrimmed();
      expected++;
      page.push({ ...e.value, seq: n });
      if (page.length >= pageSize) {
        yield page;
        page = [];
      }
    }
    if (expected !== upTo + 1) throw new ChangeLogTrimmed();
    if (page.length) yield page;
  }

  /**
   * Deletes the entries older than `maxAgeMs` or beyond the newest `maxEntries` (from the oldest
   * on, stopping at the first entry that must stay).
   * @returns how many entries were deleted
   */
  async trim(dmId: string, nowMs: number, { maxAgeMs, maxEntries }: ChangeLogRetention): Promise<number> {
    const last = headSeq(await this.head(dmId));
    const keepFrom = last - maxEntries + 1;
    const cutoff = nowMs - maxAgeMs;
    let deleted = 0;
    let batch: Deno.KvKey[] = [];
    const flush = async () => {
      const op = this.kv.atomic();
      for (const k of batch) op.delete(k);
      await op.commit();
      deleted += batch.length;
      batch = [];
    };
    for await (const e of this.kv.list<ArticleChange>({ prefix: ["article_change", dmId] }, { batchSize: 500 })) {
      const seq = e.key[2] as number;
      if (seq >= keepFrom && e.value.at >= cutoff) break;
      batch.push(e.key);
      if (batch.length >= 500) await flush();
    }
    if (batch.length) await flush();
    return deleted;
  }
}
