/**
 * Where source documents are parsed. Feeds, sitemaps and their item HTML come from outsiders, and
 * linkedom's parse time grows faster than linearly with nesting, so the default parses in a worker
 * pool (core/worker_pool.ts) with a deadline; the markup guard (markup_guard.ts) refuses the
 * hostile shapes before linkedom sees them. A refusal or a timeout is a {@link SourceFormatError}:
 * a failed poll with backoff, or a 422 at registration.
 */
import type { FeedItem } from "./document.ts";
import { SourceFormatError } from "./errors.ts";
import type { ParseJob } from "./parse_job.ts";
import type { ChildSitemap } from "./sitemap_index.ts";
import type { SourceKind } from "./source.ts";
import { PoolBusyError, PoolJobError, PoolTimeoutError, WorkerPool } from "../worker_pool.ts";

export type { ParseJob };

/** The parsers (linkedom) on this thread, imported on the first inline parse. */
const runInline = async (job: ParseJob) => (await import("./parse_job.ts")).runParseJob(job);

/** Parsing has no room in its queue. */
export class SourceParserBusyError extends Error {
  readonly retryAfterS: number;
  constructor(retryAfterS: number) {
    super("source parsing is busy");
    this.name = "SourceParserBusyError";
    this.retryAfterS = retryAfterS;
  }
}

/** Parses source documents. `caller` takes turns with other callers (`poller`, `tenant:<id>`). */
export interface SourceParser {
  /**
   * Items of a feed or sitemap, at most `maxItems`, newest first.
   * @throws {SourceFormatError} when the document is not of that kind, is refused, or takes too long
   * @throws {SourceParserBusyError} when the parse queue is full
   */
  document(caller: string, kind: SourceKind, text: string, maxItems: number): Promise<FeedItem[]>;
  /**
   * The newest `maxChildren` sitemaps of an index on its own site.
   * @throws {SourceFormatError} as {@link SourceParser.document}
   */
  sitemapIndex(caller: string, text: string, url: string, maxChildren: number): Promise<ChildSitemap[]>;
  close(): void;
}

/** Parses on the calling thread: for trusted input and tests that do not need the worker. */
export const inlineSourceParser: SourceParser = {
  document: async (_caller, kind, text, maxItems) =>
    await runInline({ op: "document", kind, text, maxItems }) as FeedItem[],
  sitemapIndex: async (_caller, text, url, maxChildren) =>
    await runInline({ op: "index", text, url, maxChildren }) as ChildSitemap[],
  close: () => {},
};

/** Settings of a {@link WorkerSourceParser} (config: `SOURCE_PARSE_*`). */
export interface WorkerSourceParserOptions {
  /** Deadline of one parse, its wait included. Default 10 s. */
  timeoutMs?: number;
  /** Workers. Default 1. */
  workers?: number;
  /** Most parses waiting. Default 16. */
  maxQueued?: number;
}

/** Parses in a {@link WorkerPool}; see the module comment. */
export class WorkerSourceParser implements SourceParser {
  readonly #pool: WorkerPool<ParseJob, FeedItem[] | ChildSitemap[]>;
  readonly #timeoutMs: number;

  constructor({ timeoutMs = 10_000, workers = 1, maxQueued = 16 }: WorkerSourceParserOptions = {}) {
    this.#timeoutMs = timeoutMs;
    this.#pool = new WorkerPool({
      name: "source parsing",
      module: new URL("./parse_worker.ts", import.meta.url),
      size: workers,
      deadlineMs: timeoutMs,
      maxQueued,
      maxQueuedPerCaller: Math.max(1, Math.ceil(maxQueued / 2)),
      // One worker is enough for polls; a caller may use it when it is free.
      perCallerRunning: workers,
    });
  }

  document(caller: string, kind: SourceKind, text: string, maxItems: number): Promise<FeedItem[]> {
    return this.#run(caller, { op: "document", kind, text, maxItems }) as Promise<FeedItem[]>;
  }

  sitemapIndex(caller: string, text: string, url: string, maxChildren: number): Promise<ChildSitemap[]> {
    return this.#run(caller, { op: "index", text, url, maxChildren }) as Promise<ChildSitemap[]>;
  }

  close(): void {
    this.#pool.close();
  }

  async #run(caller: string, job: ParseJob): Promise<FeedItem[] | ChildSitemap[]> {
    try {
      return await this.#pool.run(caller, job);
    } catch (err) {
      if (err instanceof PoolTimeoutError) {
        throw new SourceFormatError(`the document took longer than ${this.#timeoutMs} ms to read`);
      }
      if (err instanceof PoolBusyError) throw new SourceParserBusyError(err.retryAfterS);
      // The worker's messages are ours (parse_worker.ts): a refusal, or "could not be read".
      if (err instanceof PoolJobError) throw new SourceFormatError(err.message);
      throw err;
    }
  }
}
