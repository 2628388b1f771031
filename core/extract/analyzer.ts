/**
 * URL queries: fetch a page through the SSRF guard, extract its main text, summarise it.
 */
import type { Clock } from "../clock.ts";
import { SafeFetcher, SafeFetchError } from "../net/mod.ts";
import { type AnalyzedPage, pageAnalysisBusy, UrlAnalysisError, type UrlAnalyzer } from "../search/mod.ts";
import { type ArticleExtractor, ExtractionBusyError, ExtractionTimeoutError, WorkerExtractor } from "./extractor.ts";
import { summarize } from "./summarize.ts";
import { boundedCache, type LRUCache } from "../bounded_cache.ts";

const HTML_TYPES = ["text/html", "application/xhtml+xml"] as const;
// Enough for any article and for embedding it; bounds what the analysis cache holds per page.
const MAX_TEXT_CHARS = 100_000;

/** Cuts text at the last paragraph break before `max` characters (or at `max` when there is none). */
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const para = cut.lastIndexOf("\n\n");
  return para > max / 2 ? cut.slice(0, para) : cut;
}

/** Options of {@link WebPageAnalyzer}. */
export interface WebPageAnalyzerOptions {
  fetcher: SafeFetcher;
  clock: Clock;
  /** How long an analysis is reused for the same URL. Default 600 s; 0 disables the cache. */
  cacheTtlS?: number;
  /** Most cached analyses. Default 256. */
  cacheSize?: number;
  /** Sentences in the summary. Default 3. */
  summarySentences?: number;
  /** Where extraction runs. Default: a {@link WorkerExtractor} with its default pool. */
  extractor?: ArticleExtractor;
}

/** The charset a page declares in its first bytes, if any. */
function sniffCharset(bytes: Uint8Array): string | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return "utf-8";
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 2048));
  return head.match(/<meta[^>]+charset\s*=\s*["']?([\w-]+)/i)?.[1]?.toLowerCase();
}

/** Decodes page bytes with the declared charset, falling back to UTF-8 for unknown labels. */
export function decodeHtml(bytes: Uint8Array, headerCharset?: string): string {
  const label = headerCharset ?? sniffCharset(bytes) ?? "utf-8";
  try {
    return new TextDecoder(label).decode(bytes);
  } catch {
    return new TextDecoder("utf-8").decode(bytes);
  }
}

/**
 * The {@link UrlAnalyzer} behind URL queries. Repeated queries for one URL (a widget asking for
 * recommendations on every page view) are answered from a small in-memory cache, and concurrent
 * ones share one fetch.
 */
export class WebPageAnalyzer implements UrlAnalyzer {
  readonly #fetcher: SafeFetcher;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #sentences: number;
  readonly #extractor: ArticleExtractor;
  readonly #cache: LRUCache<string, AnalyzedPage>;
  readonly #inflight = new Map<string, Promise<AnalyzedPage>>();

  constructor(options: WebPageAnalyzerOptions) {
    this.#fetcher = options.fetcher;
    this.#clock = options.clock;
    this.#ttlMs = (options.cacheTtlS ?? 600) * 1000;
    this.#cache = boundedCache({
      max: options.cacheSize ?? 256,
      ttlMs: this.#ttlMs,
      now: () => this.#clock.now().getTime(),
    });
    this.#sentences = options.summarySentences ?? 3;
    this.#extractor = options.extractor ?? new WorkerExtractor();
  }

  /** Stops the extraction worker. */
  close(): void {
    this.#extractor.close();
  }

  /** @inheritdoc */
  analyze(url: string, caller = "anonymous"): Promise<AnalyzedPage> {
    const key = url.trim();
    const hit = this.#cache.get(key);
    if (hit) return Promise.resolve(hit);
    const running = this.#inflight.get(key);
    if (running) return running;
    const work = this.#analyze(key, caller).then((page) => {
      if (this.#ttlMs > 0) this.#cache.set(key, page);
      return page;
    }).finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, work);
    return work;
  }

  async #analyze(url: string, caller: string): Promise<AnalyzedPage> {
    let fetched;
    try {
      fetched = await this.#fetcher.fetch(url, { accept: HTML_TYPES });
    } catch (err) {
      if (err instanceof SafeFetchError) {
        throw new UrlAnalysisError(err.code, `query: the URL could not be analysed: ${err.message}`, err);
      }
      throw err;
    }
    let article;
    try {
      article = await this.#extractor.extract(decodeHtml(fetched.body, fetched.charset), caller);
    } catch (err) {
      if (err instanceof ExtractionTimeoutError) {
        throw new UrlAnalysisError("too_complex", `query: the URL could not be analysed: ${err.message}`, err);
      }
      if (err instanceof ExtractionBusyError) throw pageAnalysisBusy(err.retryAfterS);
      throw err;
    }
    if (!article.text) {
      throw new UrlAnalysisError("no_content", "query: the URL could not be analysed: the page has no readable text");
    }
    const text = clipText(article.text, MAX_TEXT_CHARS);
    return {
      url: fetched.url,
      title: article.title,
      text,
      summary: summarize(text, { maxSentences: this.#sentences }),
      siteName: article.siteName,
      byline: article.byline,
      publishedTime: article.publishedTime,
    };
  }
}
