/**
 * Where page extraction runs. Extraction is CPU-bound and its cost depends on markup an outsider
 * controls, so the default runs it in a worker with a deadline: a page built to be slow costs us
 * at most the deadline, and never blocks the event loop that serves everyone else.
 */
import { extractArticle, type ExtractedArticle } from "./article.ts";

/** Turns page HTML into an {@link ExtractedArticle}. */
export interface ArticleExtractor {
  /** @throws {ExtractionTimeoutError} when the page takes longer than the extractor's deadline. */
  extract(html: string): Promise<ExtractedArticle>;
  /** Releases the worker, if any. */
  close(): void;
}

/** Extraction ran past its deadline and was stopped. */
export class ExtractionTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`page analysis took longer than ${timeoutMs} ms`);
    this.name = "ExtractionTimeoutError";
  }
}

/** Extracts on the calling thread: for trusted input (fixtures, benchmarks). */
export const inlineExtractor: ArticleExtractor = {
  extract: (html) => Promise.resolve(extractArticle(html)),
  close: () => {},
};

type Reply = { id: number; article?: ExtractedArticle; error?: string };

// Loading the worker's modules is not page work; this only catches a worker that never comes up.
const WORKER_START_LIMIT_MS = 60_000;

/**
 * Runs {@link extractArticle} in one long-lived module worker, one page at a time. A page that
 * runs past `timeoutMs` terminates the worker (the only way to stop synchronous work); the next
 * page starts a fresh one.
 */
export class WorkerExtractor implements ArticleExtractor {
  readonly #timeoutMs: number;
  #worker?: Worker;
  #ready?: Promise<Worker>;
  #cancelStart?: () => void;
  #nextId = 1;
  #queue: Promise<unknown> = Promise.resolve();

  constructor({ timeoutMs = 3000 }: { timeoutMs?: number } = {}) {
    this.#timeoutMs = timeoutMs;
  }

  extract(html: string): Promise<ExtractedArticle> {
    const job = this.#queue.then(() => this.#run(html));
    this.#queue = job.catch(() => {});
    return job;
  }

  close(): void {
    const cancel = this.#cancelStart;
    this.#cancelStart = undefined;
    cancel?.();
    this.#worker?.terminate();
    this.#worker = undefined;
    this.#ready = undefined;
  }

  /** The worker once it has loaded its modules; the page deadline does not include that start-up. */
  #start(): Promise<Worker> {
    return this.#ready ??= new Promise<Worker>((resolve, reject) => {
      const worker = this.#worker = new Worker(new URL("./extract_worker.ts", import.meta.url), { type: "module" });
      const timer = setTimeout(() => fail(new Error("page extraction worker did not start")), WORKER_START_LIMIT_MS);
      const onMessage = (e: MessageEvent<{ ready?: boolean }>) => {
        if (!e.data?.ready) return;
        cleanup();
        resolve(worker);
      };
      const onError = (e: ErrorEvent) => {
        e.preventDefault();
        fail(new Error(`page extraction worker failed: ${e.message}`));
      };
      const fail = (err: Error) => {
        cleanup();
        this.close();
        reject(err);
      };
      this.#cancelStart = () => fail(new Error("page extraction worker closed while starting"));
      const cleanup = () => {
        this.#cancelStart = undefined;
        clearTimeout(timer);
        worker.removeEventListener("message", onMessage as EventListener);
        worker.removeEventListener("error", onError as EventListener);
      };
      worker.addEventListener("message", onMessage as EventListener);
      worker.addEventListener("error", onError as EventListener);
    });
  }

  async #run(html: string): Promise<ExtractedArticle> {
    const worker = await this.#start();
    const id = this.#nextId++;
    return new Promise<ExtractedArticle>((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        this.close();
        reject(new ExtractionTimeoutError(this.#timeoutMs));
      }, this.#timeoutMs);
      const onMessage = (e: MessageEvent<Reply>) => {
        if (e.data.id !== id) return;
        cleanup();
        if (e.data.article) resolve(e.data.article);
        else reject(new Error(`page extraction failed: ${e.data.error}`));
      };
      const onError = (e: ErrorEvent) => {
        e.preventDefault();
        cleanup();
        this.close();
        reject(new Error(`page extraction worker failed: ${e.message}`));
      };
      const cleanup = () => {
        clearTimeout(timer);
        worker.removeEventListener("message", onMessage as EventListener);
        worker.removeEventListener("error", onError as EventListener);
      };
      worker.addEventListener("message", onMessage as EventListener);
      worker.addEventListener("error", onError as EventListener);
      worker.postMessage({ id, html });
    });
  }
}
