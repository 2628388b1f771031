/**
 * Where page extraction runs. Extraction is CPU-bound and its cost depends on markup an outsider
 * controls, so the default runs it in a small worker pool (core/worker_pool.ts) with a deadline
 * that covers the wait and the run, a bounded queue, and turns per caller: a page built to be slow
 * costs its caller at most the deadline, never blocks the event loop, and never holds up another
 * caller's page.
 */
import type { ExtractedArticle } from "./article.ts";
import { PoolBusyError, PoolTimeoutError, WorkerPool } from "../worker_pool.ts";

/** Turns page HTML into an {@link ExtractedArticle}. */
export interface ArticleExtractor {
  /**
   * @param caller who asks (`tenant:<id>`, `payproxy:<agent>`, `poller`): callers take turns
   * @throws {ExtractionTimeoutError} when the page is not done by the extractor's deadline
   * @throws {ExtractionBusyError} when the extractor's queue is full
   */
  extract(html: string, caller?: string): Promise<ExtractedArticle>;
  /** Releases the workers, if any. */
  close(): void;
}

/** Extraction ran past its deadline (waiting or running) and was stopped. */
export class ExtractionTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`page analysis took longer than ${timeoutMs} ms`);
    this.name = "ExtractionTimeoutError";
  }
}

/** The extraction queue is full; `retryAfterS` says when to try again. */
export class ExtractionBusyError extends Error {
  readonly retryAfterS: number;
  constructor(retryAfterS: number) {
    super("page analysis is busy");
    this.name = "ExtractionBusyError";
    this.retryAfterS = retryAfterS;
  }
}

/**
 * Extracts on the calling thread: for trusted input (fixtures, benchmarks). The extractor (linkedom,
 * Readability) is imported on the first page, so a process that extracts nothing does not load it.
 */
export const inlineExtractor: ArticleExtractor = {
  extract: async (html) => (await import("./article.ts")).extractArticle(html),
  close: () => {},
};

/** Settings of a {@link WorkerExtractor} (config: `PAGE_ANALYSIS_*`). */
export interface WorkerExtractorOptions {
  /** Deadline of one page, its wait in the queue included. Default 5000 ms. */
  timeoutMs?: number;
  /** Workers. Default 2. */
  workers?: number;
  /** Most pages waiting, all callers together. Default 32. */
  maxQueued?: number;
  /** Most pages one caller may have waiting. Default 8. */
  maxQueuedPerCaller?: number;
}

/** Runs {@link extractArticle} in a {@link WorkerPool}; see the module comment. */
export class WorkerExtractor implements ArticleExtractor {
  readonly #timeoutMs: number;
  readonly #pool: WorkerPool<string, ExtractedArticle>;

  constructor({ timeoutMs = 5000, workers = 2, maxQueued = 32, maxQueuedPerCaller = 8 }: WorkerExtractorOptions = {}) {
    this.#timeoutMs = timeoutMs;
    this.#pool = new WorkerPool({
      name: "page analysis",
      module: new URL("./extract_worker.ts", import.meta.url),
      size: workers,
      deadlineMs: timeoutMs,
      maxQueued,
      maxQueuedPerCaller,
    });
  }

  async extract(html: string, caller = "anonymous"): Promise<ExtractedArticle> {
    try {
      return await this.#pool.run(caller, html);
    } catch (err) {
      if (err instanceof PoolTimeoutError) throw new ExtractionTimeoutError(this.#timeoutMs);
      if (err instanceof PoolBusyError) throw new ExtractionBusyError(err.retryAfterS);
      throw new Error(`page extraction failed: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Queue and worker figures. */
  stats() {
    return this.#pool.stats();
  }

  close(): void {
    this.#pool.close();
  }
}
