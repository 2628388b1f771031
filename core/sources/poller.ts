/**
 * Polls every registered source and feeds its new and edited items into the data model through
 * the same ingest path as `POST /v1/data-models/{dm}/articles`.
 *
 * Every process runs a poller. A source is polled by one process at a time: a process takes the
 * source's KV lease, re-reads the source's state under it (another process may just have polled),
 * polls, writes the state, and gives the lease back. A process that dies mid-poll stops renewing,
 * so another one takes the source over within one lease period; a poll that outlives its lease (a
 * stalled fetch) finds it taken at its next renewal and stops without writing. Other processes learn
 * about the new articles through the engine's revision watch.
 */
import type { Clock } from "../clock.ts";
import { systemTimers, type TimerId, type Timers } from "../timers.ts";
import { describeError, type Logger } from "../log.ts";
import { KvLease } from "../kv_lease.ts";
import { boundedCache } from "../bounded_cache.ts";
import { SafeFetcher, SafeFetchError } from "../net/mod.ts";
import type { ArticleExtractor } from "../extract/mod.ts";
import { decodeHtml } from "../extract/mod.ts";
import { type Article, cleanCategories, cleanLabel, cutBody, parsePubdate } from "../search/mod.ts";
import type { IngestReport } from "../search/mod.ts";
import type { DataModel } from "../store/mod.ts";
import { backoffSeconds, retryAfterSeconds } from "./backoff.ts";
import { canonicalLink, withoutTracking } from "./item_url.ts";
import {
  entriesOfOwnSite,
  type FeedItem,
  FULL_TEXT_MIN_CHARS,
  isSitemapIndex,
  newestFirst,
  SOURCE_MEDIA_TYPES,
  sourceText,
} from "./document.ts";
import { SourceFormatError } from "./errors.ts";
import { type SourceParser, SourceParserBusyError } from "./parser.ts";
import type { Source, SourceRepo, SourceState } from "./source.ts";

/** Settings of the poller (from config). */
export interface PollerSettings {
  /** How often a process looks for due sources. */
  tickMs: number;
  /** Lifetime of a source lease; a dead poller's sources are taken over after this. */
  leaseMs: number;
  /** Most items read per poll. */
  maxItems: number;
  /** Largest source document read. */
  maxBytes: number;
  /** Largest article page read. */
  maxPageBytes: number;
  /** Deadline of one fetch, redirects included. */
  timeoutMs: number;
  /** Most article pages fetched per poll (items with only a summary). */
  maxPageFetches: number;
  /** Longest wait between polls of a failing source. */
  maxBackoffS: number;
  /** Most child sitemaps read per poll of a sitemap index (the newest ones). */
  maxChildSitemaps: number;
}

/** What the poller is built from. */
export interface PollerDeps {
  kv: Deno.Kv;
  clock: Clock;
  log: Logger;
  sources: SourceRepo;
  dataModel(id: string): Promise<DataModel | null>;
  /** The stored article of a URL, to skip unchanged items. */
  articleByUrl(dataModelId: string, url: string): Promise<Article | null>;
  ingest(dm: DataModel, items: unknown[]): Promise<IngestReport>;
  fetcher: SafeFetcher;
  extractor: ArticleExtractor;
  timers?: Timers;
  /** Jitter source in [0, 1). */
  random?: () => number;
  /** Where source documents are parsed (a worker pool with a deadline; tests may parse inline). */
  parser: SourceParser;
  /** This process's lease owner id. */
  owner?: string;
  /** Whether this process indexes a data model (`SEARCH_SHARD`); others' sources are left to their shard. */
  serves?: (dataModelId: string) => boolean;
}

/** The outcome of one poll, as logged. */
export interface PollOutcome {
  sourceId: string;
  dataModelId: string;
  status: "ok" | "not_modified" | "error";
  httpStatus?: number;
  itemsSeen: number;
  itemsNew: number;
  itemsUpdated: number;
  pagesFetched: number;
  /** Child sitemaps read, when the source is a sitemap index. */
  sitemapsRead?: number;
  error?: string;
  ms: number;
}

const HTML_TYPES = ["text/html", "application/xhtml+xml"] as const;

// Who the poller is to the worker pools: one caller, taking turns with tenants and agents.
const POLLER_CALLER = "poller";

// An ETag is a short quoted token and Last-Modified an HTTP date (29 characters). A longer one, or
// one outside visible ASCII, is dropped (that source then polls without a conditional GET) rather
// than stored and sent back: near the 64 KiB header cap it would make the source's state too large
// for KV, the state would never save, and the source would stay due at every tick.
const MAX_VALIDATOR_CHARS = 256;
const VALIDATOR_RE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** A response's `ETag` or `Last-Modified` when it is fit to keep and send back; undefined otherwise. */
function validator(headers: Headers | undefined, name: "etag" | "last-modified"): string | undefined {
  const value = headers?.get(name);
  return value && value.length <= MAX_VALIDATOR_CHARS && VALIDATOR_RE.test(value) ? value : undefined;
}

/**
 * Thrown when a poll's lease could not be renewed: another process holds the source now (this poll
 * outlived the lease), so this one stops instead of fetching and ingesting the same source twice, and
 * leaves the state to the holder.
 */
class LeaseLostError extends Error {
  constructor() {
    super("source lease lost");
    this.name = "LeaseLostError";
  }
}

/** Renews `lease` before a slow step of a poll; throws {@link LeaseLostError} when another process has it. */
async function renew(lease: KvLease): Promise<void> {
  if (!(await lease.acquire())) throw new LeaseLostError();
}

/** Our words for a failed fetch (SafeFetchError messages are written to be shown). */
function publicError(err: unknown): string {
  if (err instanceof SafeFetchError) return err.message;
  if (err instanceof SourceFormatError) return err.message;
  if (err instanceof SourceParserBusyError) return "source parsing is busy; the next poll tries again";
  return "the source could not be read";
}

/** Polls sources on a schedule; see the module comment for how processes share the work. */
export class SourcePoller {
  readonly owner: string;
  readonly #deps: PollerDeps;
  readonly #settings: PollerSettings;
  readonly #timers: Timers;
  readonly #random: () => number;
  #timer: TimerId | undefined;
  #running = false;
  // Item URL -> the canonical URL its page named (AMP copies, redirecting links): without it such an
  // item is never found stored under its own URL, and its page would be fetched again at every poll.
  readonly #canonicalOf = boundedCache<string, string>({ max: 10_000 });
  #ticking: Promise<PollOutcome[]> | null = null;

  constructor(deps: PollerDeps, settings: PollerSettings) {
    this.#deps = deps;
    this.#settings = settings;
    this.#timers = deps.timers ?? systemTimers;
    this.#random = deps.random ?? Math.random;
    this.owner = deps.owner ?? crypto.randomUUID();
  }

  /** Polls due sources every `tickMs` until {@link stop}. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule();
  }

  /** Releases the page-extraction and parsing workers (after {@link stop}). */
  close(): void {
    this.#deps.extractor.close();
    this.#deps.parser.close();
  }

  /** Stops the schedule and waits for a poll in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#ticking?.catch(() => {});
  }

  #schedule(): void {
    this.#timer = this.#timers.setTimeout(() => {
      this.tick().catch((err) => this.#deps.log.error("source poll round failed", { error: describeError(err) }))
        .finally(() => {
          if (this.#running) this.#schedule();
        });
    }, this.#settings.tickMs);
  }

  /**
   * One round: polls due sources whose lease this process wins, in passes. A pass polls one due
   * source per data model (its most overdue), so a data model with many or slow sources takes
   * turns with every other one instead of holding the round; a pass starts only while the round is
   * younger than `tickMs`, and what is left waits for the next round, most overdue first.
   * Concurrent calls share the round in flight.
   * @returns the outcomes of the polls this process made
   */
  tick(): Promise<PollOutcome[]> {
    if (this.#ticking) return this.#ticking;
    const run = async () => {
      const out: PollOutcome[] = [];
      const sources = await this.#deps.sources.listAll();
      const states = await this.#deps.sources.states(sources.map((s) => s.id));
      const startedMs = this.#deps.clock.now().getTime();
      const due = new Map<string, { source: Source; dueMs: number }[]>();
      for (const [i, source] of sources.entries()) {
        const dueMs = states[i] ? Date.parse(states[i]!.nextPollAt) : 0;
        if (dueMs > startedMs) continue;
        if (this.#deps.serves && !this.#deps.serves(source.dataModelId)) continue;
        const queue = due.get(source.dataModelId) ?? [];
        queue.push({ source, dueMs });
        due.set(source.dataModelId, queue);
      }
      for (const queue of due.values()) queue.sort((a, b) => a.dueMs - b.dueMs);
      for (let pass = 0; due.size > 0; pass++) {
        if (pass > 0 && this.#deps.clock.now().getTime() - startedMs >= this.#settings.tickMs) break;
        for (const [dataModelId, queue] of due) {
          // The first of its due sources this process gets to poll (another may hold a lease).
          while (queue.length) {
            const { source } = queue.shift()!;
            const outcome = await this.pollIfDue(source).catch((err) => {
              this.#deps.log.error("source poll failed", { source_id: source.id, error: describeError(err) });
              return null;
            });
            if (outcome) {
              out.push(outcome);
              break;
            }
          }
          if (!queue.length) due.delete(dataModelId);
        }
      }
      return out;
    };
    this.#ticking = run().finally(() => this.#ticking = null);
    return this.#ticking;
  }

  /** Polls one source when it is due and this process wins its lease; null otherwise. */
  async pollIfDue(source: Source): Promise<PollOutcome | null> {
    const lease = new KvLease({
      kv: this.#deps.kv,
      clock: this.#deps.clock,
      key: ["source_lease", source.id],
      owner: this.owner,
      ttlMs: this.#settings.leaseMs,
    });
    if (!(await lease.acquire())) return null;
    try {
      // Under the lease: a process that polled just before us has moved next_poll_at already, and
      // one that removed the source meanwhile took its state too (the round's list is older).
      const st = (await this.#deps.sources.state(source.id)).value;
      if (st && Date.parse(st.nextPollAt) > this.#deps.clock.now().getTime()) return null;
      if (!st && !(await this.#deps.sources.get(source.id))) return null;
      return await this.#poll(
        source,
        st ?? { nextPollAt: source.createdAt, itemsAdded: 0, itemsUpdated: 0, failures: 0 },
        lease,
      );
    } finally {
      await lease.release();
    }
  }

  async #poll(source: Source, state: SourceState, lease: KvLease): Promise<PollOutcome | null> {
    const { clock, log } = this.#deps;
    const started = performance.now();
    const polledAt = clock.now();
    const outcome: PollOutcome = {
      sourceId: source.id,
      dataModelId: source.dataModelId,
      status: "ok",
      itemsSeen: 0,
      itemsNew: 0,
      itemsUpdated: 0,
      pagesFetched: 0,
      ms: 0,
    };
    const next: SourceState = { ...state, lastPolledAt: polledAt.toISOString() };
    let leaseLost = false;
    try {
      const dm = await this.#deps.dataModel(source.dataModelId);
      if (!dm) return null;
      const headers: Record<string, string> = {};
      if (state.etag) headers["if-none-match"] = state.etag;
      if (state.lastModified) headers["if-modified-since"] = state.lastModified;
      let res;
      try {
        res = await this.#deps.fetcher.fetch(source.url, {
          accept: SOURCE_MEDIA_TYPES[source.type],
          headers,
          maxBytes: this.#settings.maxBytes,
          timeoutMs: this.#settings.timeoutMs,
        });
      } catch (err) {
        if (err instanceof SafeFetchError && err.status === 304) {
          // Not modified: nothing to read, nothing to parse.
          outcome.status = "not_modified";
          outcome.httpStatus = 304;
          next.etag = validator(err.headers, "etag") ?? state.etag;
          next.lastModified = validator(err.headers, "last-modified") ?? state.lastModified;
          this.#succeeded(source, next, polledAt, "not_modified");
          return outcome;
        }
        outcome.httpStatus = err instanceof SafeFetchError ? err.status : undefined;
        const retryAfterS = err instanceof SafeFetchError
          ? retryAfterSeconds(err.headers?.get("retry-after"), polledAt)
          : undefined;
        throw Object.assign(err as Error, { retryAfterS });
      }
      outcome.httpStatus = res.status;
      const text = await sourceText(res, this.#settings.maxBytes);
      const items = source.type !== "sitemap"
        ? await this.#deps.parser.document(POLLER_CALLER, source.type, text, this.#settings.maxItems)
        : isSitemapIndex(text)
        ? await this.#readSitemapIndex(text, res.url, outcome, lease)
        : entriesOfOwnSite(
          await this.#deps.parser.document(POLLER_CALLER, "sitemap", text, this.#settings.maxItems),
          res.url,
        );
      outcome.itemsSeen = items.length;
      const articles = await this.#articlesOf(source, dm, items, outcome, lease);
      if (articles.length) {
        const report = await this.#deps.ingest(dm, articles);
        outcome.itemsNew = report.created;
        outcome.itemsUpdated = report.updated;
      }
      next.etag = validator(res.headers, "etag");
      next.lastModified = validator(res.headers, "last-modified");
      next.itemsAdded = state.itemsAdded + outcome.itemsNew;
      next.itemsUpdated = state.itemsUpdated + outcome.itemsUpdated;
      this.#succeeded(source, next, polledAt, "ok");
      return outcome;
    } catch (err) {
      if (err instanceof LeaseLostError) {
        leaseLost = true;
        log.warn("source poll stopped: another process took its lease", { source_id: source.id });
        return null;
      }
      outcome.status = "error";
      outcome.error = publicError(err);
      next.failures = state.failures + 1;
      next.lastStatus = "error";
      next.lastError = outcome.error;
      const waitS = backoffSeconds({
        intervalS: source.intervalS,
        failures: next.failures,
        maxS: this.#settings.maxBackoffS,
        retryAfterS: (err as { retryAfterS?: number }).retryAfterS,
        random: this.#random,
      });
      next.nextPollAt = new Date(polledAt.getTime() + waitS * 1000).toISOString();
      if (
        !(err instanceof SafeFetchError || err instanceof SourceFormatError || err instanceof SourceParserBusyError)
      ) {
        log.warn("source poll error", { source_id: source.id, error: describeError(err) });
      }
      return outcome;
    } finally {
      outcome.ms = Math.round(performance.now() - started);
      if (!leaseLost && await this.#deps.sources.saveState(source, next)) {
        log.info("source polled", {
          source_id: source.id,
          data_model_id: source.dataModelId,
          status: outcome.status,
          http_status: outcome.httpStatus,
          items_seen: outcome.itemsSeen,
          items_new: outcome.itemsNew,
          items_updated: outcome.itemsUpdated,
          pages_fetched: outcome.pagesFetched,
          ...(outcome.sitemapsRead !== undefined ? { sitemaps_read: outcome.sitemapsRead } : {}),
          next_poll_at: next.nextPollAt,
          ms: outcome.ms,
          ...(outcome.error ? { error: outcome.error } : {}),
        });
      }
    }
  }

  #succeeded(source: Source, next: SourceState, polledAt: Date, status: "ok" | "not_modified"): void {
    next.lastOkAt = polledAt.toISOString();
    next.lastStatus = status;
    next.failures = 0;
    next.nextPollAt = new Date(polledAt.getTime() + source.intervalS * 1000).toISOString();
  }

  /**
   * Turns feed items into article inputs: identity by canonical URL, unchanged items skipped,
   * article pages fetched (bounded) for items that carry only a summary.
   */
  async #articlesOf(
    source: Source,
    dm: DataModel,
    items: FeedItem[],
    outcome: PollOutcome,
    lease: KvLease,
  ): Promise<Record<string, unknown>[]> {
    const byUrl = new Map<string, Record<string, unknown>>();
    for (const item of items) {
      let url: string;
      try {
        url = withoutTracking(item.url);
      } catch {
        continue; // not an absolute URL: nothing to identify the article by
      }
      if (!/^https?:/.test(url)) continue;
      const alias = this.#canonicalOf.get(`${dm.id} ${url}`);
      const existing = await this.#deps.articleByUrl(dm.id, url) ??
        (alias ? await this.#deps.articleByUrl(dm.id, alias) : null);
      const input: Record<string, unknown> = {
        url,
        title: item.title,
        body: item.body,
        summary: item.summary,
        author: item.author,
        pubdate: item.pubdate ?? existing?.pubdate,
        image: item.image,
        site: item.site,
        categories: item.categories?.slice(0, 200),
        body_html: item.bodyHtml,
      };
      const thin = !item.body || item.body.length < FULL_TEXT_MIN_CHARS;
      const wantsPage = (source.fetchPages || source.type === "sitemap") && thin;
      if (wantsPage && existing && (!item.pubdate || parsePubdate(item.pubdate) === existing.pubdateUnix)) {
        continue; // already read that page, and the source says nothing changed
      }
      if (wantsPage && outcome.pagesFetched < this.#settings.maxPageFetches) {
        outcome.pagesFetched++;
        await renew(lease); // page fetches are the slow part of a poll
        const page = await this.#readPage(url);
        if (page) {
          input.url = page.canonical;
          if (page.canonical !== url) this.#canonicalOf.set(`${dm.id} ${url}`, page.canonical);
          input.body = page.text || input.body;
          if (page.markdown) input.body_markdown = page.markdown;
          input.title ??= page.title;
          input.author ??= page.byline;
          input.pubdate ??= page.publishedTime;
          if (!input.summary && item.body) input.summary = item.body.slice(0, 1000);
        }
      }
      if (!input.title) continue; // a sitemap entry whose page could not be read
      // The page may name another URL as canonical: that is the article to compare and update.
      const stored = input.url === existing?.url ? existing : await this.#deps.articleByUrl(dm.id, String(input.url));
      if (stored && sameContent(stored, input)) continue;
      for (const k of Object.keys(input)) if (input[k] === undefined) delete input[k];
      byUrl.set(String(input.url), input);
    }
    return [...byUrl.values()];
  }

  /**
   * Entries of a sitemap index: its newest child sitemaps of the same site (bounded), each
   * fetched through the SSRF guard and capped like the index; an unreadable child is skipped.
   * @throws {SourceFormatError} when no child sitemap could be read
   */
  async #readSitemapIndex(text: string, indexUrl: string, outcome: PollOutcome, lease: KvLease): Promise<FeedItem[]> {
    const children = await this.#deps.parser.sitemapIndex(
      POLLER_CALLER,
      text,
      indexUrl,
      this.#settings.maxChildSitemaps,
    );
    const items: FeedItem[] = [];
    outcome.sitemapsRead = 0;
    for (const child of children) {
      await renew(lease); // each child is a fetch of up to maxBytes
      try {
        const res = await this.#deps.fetcher.fetch(child.url, {
          accept: SOURCE_MEDIA_TYPES.sitemap,
          maxBytes: this.#settings.maxBytes,
          timeoutMs: this.#settings.timeoutMs,
        });
        const text = await sourceText(res, this.#settings.maxBytes);
        const entries = await this.#deps.parser.document(POLLER_CALLER, "sitemap", text, this.#settings.maxItems);
        items.push(...entriesOfOwnSite(entries, res.url));
        outcome.sitemapsRead++;
      } catch (err) {
        if (!(err instanceof SafeFetchError || err instanceof SourceFormatError)) throw err;
        this.#deps.log.debug("child sitemap not read", { error: describeError(err) });
      }
    }
    if (!outcome.sitemapsRead) throw new SourceFormatError("no sitemap listed by the index could be read");
    return newestFirst(items, this.#settings.maxItems);
  }

  async #readPage(
    url: string,
  ): Promise<
    | { canonical: string; text: string; markdown?: string; title?: string; byline?: string; publishedTime?: string }
    | null
  > {
    try {
      const res = await this.#deps.fetcher.fetch(url, {
        accept: HTML_TYPES,
        maxBytes: this.#settings.maxPageBytes,
        timeoutMs: this.#settings.timeoutMs,
      });
      const html = decodeHtml(res.body, res.charset);
      const article = await this.#deps.extractor.extract(html, POLLER_CALLER);
      return {
        canonical: canonicalLink(html, res.url) ?? withoutTracking(res.url),
        text: article.text,
        markdown: article.markdown,
        title: article.title || undefined,
        byline: article.byline,
        publishedTime: article.publishedTime,
      };
    } catch (err) {
      this.#deps.log.debug("article page not read", { error: describeError(err) });
      return null;
    }
  }
}

/** Whether an item says what the stored article already says (no update needed). */
function sameContent(a: Article, input: Record<string, unknown>): boolean {
  // Compared as stored, or a title with an invisible character would read as edited at every poll.
  const title = cleanLabel(String(input.title ?? ""));
  const body = cutBody(String(input.body ?? ""));
  const pub = parsePubdate(input.pubdate as string | undefined);
  const categories = cleanCategories((input.categories as string[] | undefined) ?? []);
  return a.title === title && a.body === body && (pub === undefined || pub === a.pubdateUnix) &&
    categories.join("\n") === (a.categories ?? []).join("\n");
}
