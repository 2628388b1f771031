/**
 * The index registry: one in-memory index per data model this process serves (its
 * `SEARCH_SHARD`), built from KV on first use, kept in step with the writes of other processes
 * through the article change log, and the one queue per data model that keeps KV and the index in
 * the same order (ingests, changes applied, rebuilds, retention).
 */
import type { Clock } from "../clock.ts";
import { describeError, type Logger } from "../log.ts";
import { type Article, ArticleRepo, embeddingText } from "./store/articles.ts";
import { type ArticleChange, CHANGE_LOG_RETENTION, ChangeLogTrimmed, headKey, headSeq } from "./store/change_log.ts";
import type { EmbeddingProvider } from "./embeddings/provider.ts";
import { bagOf, DataModelIndex } from "./index/index.ts";
import { outsideShard, type SearchShard, serves } from "./index/shard.ts";
import { type EmbedSafely, fromStored, toStored } from "./embed.ts";

/** How one data model's index follows KV in this process. */
export interface IndexFollowing {
  /** Full builds from KV (the first, and rebuilds when the change log no longer reached back). */
  builds: number;
  /** Changes made by other processes applied without rebuilding. */
  changesApplied: number;
}

/** What the registry is built from. */
export interface IndexRegistryOptions {
  kv: Deno.Kv;
  clock: Clock;
  log: Logger;
  embeddings: EmbeddingProvider;
  embed: EmbedSafely;
  /** The data models this process indexes (`SEARCH_SHARD`); all when absent. */
  shard?: SearchShard | null;
}

/** The indexes of this process, their building and their following of the change log. */
export class IndexRegistry {
  readonly articles: ArticleRepo;
  private readonly indexes = new Map<string, Promise<DataModelIndex>>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private pollTimer?: ReturnType<typeof setInterval>;
  private polling?: Promise<void>;
  /** Per data model: the change-log position its index reflects (set once built). */
  private readonly cursors = new Map<string, number>();
  private readonly following = new Map<string, IndexFollowing>();
  /** Names this process's entries in the change log: it applied them already and skips them. */
  private readonly writerId = crypto.randomUUID();
  private readonly rebuildWaiters = new Map<string, (() => void)[]>();
  private readonly appliedWaiters = new Map<string, (() => void)[]>();

  constructor(private readonly options: IndexRegistryOptions) {
    this.articles = new ArticleRepo(options.kv, options.clock, this.writerId);
  }

  /** Loads the embedding provider and builds the index of every data model this process serves. */
  async start(): Promise<void> {
    const ids = (await this.articles.dataModelIds()).filter((id) => this.serves(id));
    for (const id of ids) {
      try {
        await this.index(id);
      } catch (err) {
        // E.g. the embeddings server is down: serve anyway; the index is built on first use.
        this.options.log.error("search index build failed; retrying on first use", {
          data_model_id: id,
          error: describeError(err),
        });
      }
    }
  }

  /** Whether this process indexes `dataModelId` (its `SEARCH_SHARD`). */
  serves(dataModelId: string): boolean {
    return serves(this.options.shard ?? null, dataModelId);
  }

  /** The index of a data model, built from KV on first use; 421 for a data model of another shard. */
  index(dataModelId: string): Promise<DataModelIndex> {
    if (!this.serves(dataModelId)) return Promise.reject(outsideShard(this.options.shard!));
    let p = this.indexes.get(dataModelId);
    if (!p) {
      p = this.build(dataModelId);
      this.indexes.set(dataModelId, p);
      p.catch(() => this.indexes.delete(dataModelId));
    }
    return p;
  }

  /** Runs `work` after the ingests, changes and rebuilds already queued for the data model. */
  // One at a time per data model keeps KV and the index in the same order.
  serially<T>(dataModelId: string, work: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(dataModelId) ?? Promise.resolve();
    const run = prev.catch(() => {}).then(work);
    this.queues.set(dataModelId, run);
    run.finally(() => {
      if (this.queues.get(dataModelId) === run) this.queues.delete(dataModelId);
    }).catch(() => {});
    return run;
  }

  private async build(dataModelId: string): Promise<DataModelIndex> {
    const started = performance.now();
    const provider = this.options.embeddings;
    await provider.init();
    const index = new DataModelIndex(dataModelId, provider.dims, {
      removeCommonDirection: provider.removeCommonDirection ?? false,
    });
    // The log position read before listing: changes after it are applied by the next poll (an
    // article listed in its newer version is then fetched again, which is harmless).
    const position = headSeq(await this.articles.changes.head(dataModelId));
    let stale: Article[] = [];
    const flush = async () => {
      const vectors = await this.options.embed(stale.map(embeddingText));
      for (let i = 0; i < stale.length; i++) {
        const a = stale[i]!, v = vectors?.[i];
        // The index holds what KV holds (int8), as for every other article.
        const stored = v ? toStored(provider.id, v) : undefined;
        index.upsert(a, stored ? fromStored(stored) : null, bagOf(a));
        if (stored) await this.articles.setEmbedding(dataModelId, a.id, stored);
      }
      stale = [];
    };
    await index.bulkLoad(async () => {
      for await (const a of this.articles.list(dataModelId)) {
        const e = a.embedding;
        if (e && e.model === provider.id && e.dims === provider.dims) index.upsert(a, fromStored(e), bagOf(a));
        else {
          // Embedded by another provider (or not at all): embed again, in batches.
          stale.push(a);
          if (stale.length >= 256) await flush();
        }
      }
      if (stale.length) await flush();
    });
    this.cursors.set(dataModelId, position);
    const stats = this.following.get(dataModelId) ?? { builds: 0, changesApplied: 0 };
    this.following.set(dataModelId, { ...stats, builds: stats.builds + 1 });
    this.options.log.info("search index built", {
      data_model_id: dataModelId,
      articles: index.size,
      ms: Math.round(performance.now() - started),
    });
    return index;
  }

  /**
   * Retention in KV (one process at a time, under the retention lease): deletes the articles
   * published before `cutoffUnix` from this process's index and from KV, logging each deletion,
   * so every other process's index drops them when it next applies the change log.
   * @returns how many articles were deleted
   */
  async expire(dataModelId: string, cutoffUnix: number): Promise<number> {
    await this.index(dataModelId);
    return await this.serially(dataModelId, async () => {
      const index = await this.index(dataModelId);
      const expired: number[] = [];
      const pub = index.pubdates;
      for (let s = 0; s < index.size; s++) if (pub[s]! < cutoffUnix) expired.push(s);
      // KV first: a delete that gives up part way (lost races) leaves them in this index too, and the
      // next sweep finds and deletes them again. Taken out of the index first, they would stay in KV
      // (and in every other process) with nothing left to find them by.
      const cards = index.liveCards(expired);
      await this.articles.deleteMany(dataModelId, cards);
      index.removeSlots(expired);
      return cards.length;
    });
  }

  /**
   * Trims a data model's change log to {@link CHANGE_LOG_RETENTION} (the retention sweep does,
   * under its lease). A process whose position is trimmed away rebuilds that index.
   * @returns how many entries were deleted
   */
  trimChanges(dataModelId: string): Promise<number> {
    return this.articles.changes.trim(dataModelId, this.options.clock.now().getTime(), CHANGE_LOG_RETENTION);
  }

  /**
   * Keeps indexes fresh when other processes (another server, `admin articles import`, the
   * retention sweep elsewhere) write: every write logs its changes and moves the model's log
   * head (see change_log.ts); this polls the heads of the indexed data models (one `getMany` per
   * interval) and applies the changes after each index's position ({@link applyChanges}).
   * Polling, not `kv.watch`: the local SQLite backend does not notify other processes. Stop
   * with {@link close}.
   */
  watch({ intervalMs = 2000 }: { intervalMs?: number } = {}): void {
    if (this.pollTimer !== undefined) return;
    this.pollTimer = setInterval(() => {
      if (this.polling) return;
      this.polling = this.pollHeads().catch((err) =>
        this.options.log.warn("article change poll failed", { error: describeError(err) })
      ).finally(() => this.polling = undefined);
    }, intervalMs);
  }

  /** Stops watching (the indexes stay usable) and waits for a poll in flight. */
  async close(): Promise<void> {
    if (this.pollTimer !== undefined) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    await this.polling;
  }

  private async pollHeads(): Promise<void> {
    // Models still building have no position yet: the build records it.
    const ids = [...this.cursors.keys()];
    for (let i = 0; i < ids.length; i += 10) {
      const chunk = ids.slice(i, i + 10);
      const heads = await this.options.kv.getMany<{ seq?: number }[]>(chunk.map(headKey));
      for (const [j, head] of heads.entries()) {
        if (headSeq(head) !== this.cursors.get(chunk[j]!)) await this.applyChanges(chunk[j]!);
      }
    }
  }

  /**
   * Brings a built index up to date with the change log: fetches the current version of every
   * article other processes changed since the index's position and re-indexes it (or takes it
   * out when it is gone). Rebuilds from KV only when the log was trimmed past that position.
   * Runs after ingests already queued for the model.
   * @returns how many changes were applied
   */
  applyChanges(dataModelId: string): Promise<number> {
    return this.serially(dataModelId, async () => {
      const loaded = this.indexes.get(dataModelId);
      const from = this.cursors.get(dataModelId);
      if (!loaded || from === undefined) return 0;
      const index = await loaded;
      const head = headSeq(await this.articles.changes.head(dataModelId));
      if (head === from) return 0;
      let applied = 0;
      try {
        if (head < from) throw new ChangeLogTrimmed(); // the store was replaced under us
        for await (const page of this.articles.changes.since(dataModelId, from, head)) {
          applied += await this.applyPage(index, dataModelId, page.filter((c) => c.writer !== this.writerId));
          this.cursors.set(dataModelId, page.at(-1)!.seq);
        }
      } catch (err) {
        if (!(err instanceof ChangeLogTrimmed)) throw err;
        this.options.log.warn("article change log trimmed past this index's position; rebuilding", {
          data_model_id: dataModelId,
        });
        await this.rebuildNow(dataModelId);
        return applied;
      }
      const stats = this.following.get(dataModelId)!;
      this.following.set(dataModelId, { ...stats, changesApplied: stats.changesApplied + applied });
      if (applied > 0) {
        const waiting = this.appliedWaiters.get(dataModelId) ?? [];
        this.appliedWaiters.delete(dataModelId);
        for (const resolve of waiting) resolve();
      }
      return applied;
    });
  }

  // Re-indexes the current version of each changed article (its latest change in the page decides
  // nothing: what KV holds now does), embedding those stored without a matching vector.
  private async applyPage(index: DataModelIndex, dataModelId: string, changes: ArticleChange[]): Promise<number> {
    if (changes.length === 0) return 0;
    const byId = new Map<string, ArticleChange>();
    for (const c of changes) byId.set(c.id, c);
    const list = [...byId.values()];
    const found = await this.articles.getMany(dataModelId, list.map((c) => c.id));
    const provider = this.options.embeddings;
    const stale: Article[] = [];
    for (let i = 0; i < list.length; i++) {
      const a = found[i], c = list[i]!;
      if (!a) index.removeArticle(c.url, c.id);
      else if (a.embedding?.model === provider.id && a.embedding.dims === provider.dims) {
        index.upsert(a, fromStored(a.embedding), bagOf(a));
      } else stale.push(a);
    }
    if (stale.length) {
      const vectors = await this.options.embed(stale.map(embeddingText));
      stale.forEach((a, i) => {
        // Held in the stored form (int8), as every other process holds it.
        const v = vectors?.[i];
        index.upsert(a, v ? fromStored(toStored(provider.id, v)) : null, bagOf(a));
      });
    }
    return list.length;
  }

  /** Rebuilds a data model's index from KV and swaps it in (after ingests already queued). */
  rebuild(dataModelId: string): Promise<void> {
    return this.serially(dataModelId, () => this.rebuildNow(dataModelId));
  }

  private async rebuildNow(dataModelId: string): Promise<void> {
    const index = await this.build(dataModelId);
    this.indexes.set(dataModelId, Promise.resolve(index));
    const waiting = this.rebuildWaiters.get(dataModelId) ?? [];
    this.rebuildWaiters.delete(dataModelId);
    for (const resolve of waiting) resolve();
  }

  // --- For tests, benchmarks and tools -------------------------------------------------------

  /** How this process's index of a data model follows KV: full builds, changes applied, log position. */
  followStats(dataModelId: string): IndexFollowing & { position?: number } {
    return {
      ...(this.following.get(dataModelId) ?? { builds: 0, changesApplied: 0 }),
      position: this.cursors.get(dataModelId),
    };
  }

  /**
   * Serves a data model from an index built elsewhere (benchmarks, tools): its articles are
   * not read from KV.
   */
  adoptIndex(index: DataModelIndex): void {
    this.indexes.set(index.dataModelId, Promise.resolve(index));
  }

  /** Resolves once changes made by other processes are next applied to a data model's index. */
  nextApplied(dataModelId: string): Promise<void> {
    return new Promise((resolve) => {
      const waiting = this.appliedWaiters.get(dataModelId) ?? [];
      waiting.push(resolve);
      this.appliedWaiters.set(dataModelId, waiting);
    });
  }

  /**
   * Resolves once a data model's index is next rebuilt from KV (after the change log was trimmed
   * past its position, or by {@link rebuild}).
   */
  nextRebuild(dataModelId: string): Promise<void> {
    return new Promise((resolve) => {
      const waiting = this.rebuildWaiters.get(dataModelId) ?? [];
      waiting.push(resolve);
      this.rebuildWaiters.set(dataModelId, waiting);
    });
  }
}
