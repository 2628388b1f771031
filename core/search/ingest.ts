/**
 * Article ingestion: validates each item (one error per bad item, never the whole call),
 * converts bodies sent as HTML, embeds in batches, stores (idempotent on URL) and indexes, in time
 * slices so a large call does not stall other requests. Runs in the data model's queue of the
 * {@link IndexRegistry}, so KV and the index see writes in the same order.
 */
import type { z } from "zod";
import type { Clock } from "../clock.ts";
import { describeIssue, isMissing, issuePath } from "../zod_issue.ts";
import { timeSlicer } from "../timers.ts";
import { describeError, type Logger } from "../log.ts";
import type { DataModel } from "../store/mod.ts";
import { markupWithinLimits, stripTags } from "../text/mod.ts";
import {
  type ArticleInput,
  ArticleInputError,
  articleInputSchema,
  embeddingText,
  normalizeArticle,
  type UpsertOutcome,
} from "./store/articles.ts";
import { articleBag, storableTerms } from "./index/index.ts";
import { liveSince } from "./store/retention.ts";
import type { EmbeddingProvider } from "./embeddings/provider.ts";
import { type EmbedSafely, fromStored, toStored } from "./embed.ts";
import { searchErrors } from "./errors.ts";
import type { IndexRegistry } from "./registry.ts";

// Texts embedded per call during an ingest: small enough to yield between batches.
const INGEST_EMBED_BATCH = 64;
/** Most items one ingest call takes. */
export const MAX_INGEST_ITEMS = 1000;
// Characters of an item's `body_html` converted to Markdown (bounds the parse on the ingest path).
const MAX_HTML_CONVERTED = 100_000;
// How far ahead of now a pubdate may be: a clock off by a time zone or a post scheduled for later
// today passes; a date in a later year would hold the top of `most_recent` until then.
const MAX_PUBDATE_AHEAD_S = 86_400;

/** Outcome of one ingested item. */
export interface IngestItemResult {
  index: number;
  status: "created" | "updated" | "error";
  id?: string;
  url?: string;
  error?: string;
}

/** Outcome of an ingest call. */
export interface IngestReport {
  received: number;
  created: number;
  updated: number;
  failed: number;
  results: IngestItemResult[];
}

/** What ingestion is built from. */
export interface ArticleIngestOptions {
  clock: Clock;
  log: Logger;
  embeddings: EmbeddingProvider;
  embed: EmbedSafely;
}

/**
 * Items that carry `body_html`, with it kept as `body_markdown` (and as the plain `body` when they
 * have none). The converter loads only when an item needs it.
 */
async function htmlBodies(items: unknown[]): Promise<Map<number, Record<string, unknown>>> {
  const out = new Map<number, Record<string, unknown>>();
  const withHtml = items.flatMap((item, i) => {
    const html = (item as { body_html?: unknown } | null)?.body_html;
    return typeof html === "string" && html.length <= 2_000_000 && html.trim() ? [{ i, html }] : [];
  });
  if (withHtml.length === 0) return out;
  const [{ htmlToMarkdown }, { htmlToText }] = await Promise.all([
    import("../text/markdown.ts"),
    import("../sources/feeds.ts"),
  ]);
  // Each item's markup is up to 100k characters: other requests are served between items.
  const slice = timeSlicer();
  for (const { i, html } of withHtml) {
    await slice();
    const item = items[i] as Record<string, unknown>;
    const base = typeof item.url === "string" ? item.url : undefined;
    // Markdown and the plain body keep 20k characters: a bounded head of the markup is all they need.
    const head = html.slice(0, MAX_HTML_CONVERTED);
    const hasBody = ["body", "content", "text"].some((k) => typeof item[k] === "string" && item[k] !== "");
    // Markup too large or too deep to parse on this path keeps no Markdown; its text is still read.
    if (!markupWithinLimits(head)) {
      if (!hasBody) out.set(i, { ...item, body: stripTags(head) });
      continue;
    }
    let markdown: string;
    try {
      markdown = htmlToMarkdown(head, base);
    } catch {
      continue; // unreadable markup: the item keeps its plain body
    }
    out.set(i, {
      ...item,
      body_markdown: item.body_markdown ?? markdown,
      ...(hasBody ? {} : { body: htmlToText(head) }),
    });
  }
  return out;
}

/** Describes a zod issue for a per-item ingest error: `url: must be an absolute http(s) URL`. */
function issueText(error: z.ZodError): string {
  const issue = error.issues[0]!;
  return issuePath(issue) === "" && isMissing(issue) ? "item is required" : describeIssue(issue);
}

/** Ingestion into the articles and indexes of a registry. */
export class ArticleIngest {
  constructor(private readonly registry: IndexRegistry, private readonly options: ArticleIngestOptions) {}

  /** Validates, stores (idempotent on URL) and indexes up to {@link MAX_INGEST_ITEMS} items. */
  ingest(dataModel: DataModel, items: unknown[]): Promise<IngestReport> {
    if (items.length > MAX_INGEST_ITEMS) {
      return Promise.reject(searchErrors.too_many_items({ max: MAX_INGEST_ITEMS }));
    }
    return this.registry.serially(dataModel.id, () => this.ingestNow(dataModel, items));
  }

  private async ingestNow(dm: DataModel, items: unknown[]): Promise<IngestReport> {
    const index = await this.registry.index(dm.id);
    const articles = this.registry.articles;
    const provider = this.options.embeddings;
    const results: IngestItemResult[] = new Array(items.length);
    const valid: { i: number; fields: ReturnType<typeof normalizeArticle> }[] = [];
    // Bodies sent as HTML become Markdown first (bounded; see htmlBodies).
    const fromHtml = await htmlBodies(items);
    // A call may carry 30 MB: the work goes in time slices, so other requests interleave.
    const slice = timeSlicer();
    for (const [i, item] of items.entries()) {
      await slice();
      const parsed = articleInputSchema.safeParse(fromHtml.get(i) ?? item);
      if (!parsed.success) {
        // The item's url names it in the report only when it is one: an invalid one is the caller's raw text.
        const url = articleInputSchema.shape.url.safeParse((item as { url?: unknown } | null)?.url);
        results[i] = {
          index: i,
          status: "error",
          url: url.success ? url.data : undefined,
          error: issueText(parsed.error),
        };
        continue;
      }
      try {
        const fields = normalizeArticle(dm, parsed.data as ArticleInput, this.options.clock);
        if (fields.pubdateUnix < (liveSince(dm, this.options.clock) ?? -Infinity)) {
          results[i] = { index: i, status: "error", url: fields.url, error: "pubdate: older than max_age_days" };
          continue;
        }
        if (fields.pubdateUnix > this.options.clock.now().getTime() / 1000 + MAX_PUBDATE_AHEAD_S) {
          results[i] = { index: i, status: "error", url: fields.url, error: "pubdate: more than a day in the future" };
          continue;
        }
        valid.push({ i, fields });
      } catch (err) {
        // Only our own field errors are public; anything else is logged, not echoed.
        if (!(err instanceof ArticleInputError)) {
          this.options.log.warn("article item unreadable", { data_model_id: dm.id, error: describeError(err) });
        }
        const error = err instanceof ArticleInputError ? err.message : "item: could not be read";
        results[i] = { index: i, status: "error", url: parsed.data.url, error };
      }
    }
    const vectors: (Float32Array | null)[] = [];
    for (let at = 0; at < valid.length; at += INGEST_EMBED_BATCH) {
      const batch = valid.slice(at, at + INGEST_EMBED_BATCH);
      const got = await this.options.embed(batch.map((v) => embeddingText(v.fields)));
      vectors.push(...batch.map((_, k) => got?.[k] ?? null));
      await slice();
    }
    // The BM25F terms, indexed here and stored with the article so no build tokenises it again.
    const bags: ReturnType<typeof articleBag>[] = [];
    for (const v of valid) {
      bags.push(articleBag(v.fields));
      await slice();
    }
    // The first item of each URL is written in one batched upsert; repeats of a URL within the
    // call follow one by one, in order, so the last one wins as it would in separate calls.
    const firsts: number[] = [], repeats: number[] = [];
    const seenUrls = new Set<string>();
    valid.forEach((v, j) => {
      if (seenUrls.has(v.fields.url)) repeats.push(j);
      else {
        seenUrls.add(v.fields.url);
        firsts.push(j);
      }
    });
    const withVector = (j: number) => {
      const vector = vectors?.[j] ?? null;
      const fields = valid[j]!.fields;
      return {
        ...fields,
        embedding: vector ? toStored(provider.id, vector) : undefined,
        terms: storableTerms(fields, bags[j]!),
      };
    };
    const apply = (j: number, outcome: UpsertOutcome) => {
      const { i, fields } = valid[j]!;
      const stored = outcome.article.embedding;
      index.upsert(outcome.article, stored ? fromStored(stored) : null, bags[j]);
      results[i] = {
        index: i,
        status: outcome.created ? "created" : "updated",
        id: outcome.article.id,
        url: fields.url,
      };
    };
    const failed = (j: number, err: unknown) => {
      const { i, fields } = valid[j]!;
      this.options.log.error("article upsert failed", { data_model_id: dm.id, error: describeError(err) });
      results[i] = { index: i, status: "error", url: fields.url, error: "could not store the article" };
    };
    try {
      const outcomes = await articles.upsertMany(firsts.map(withVector));
      // Each stored article joins this index now: its change-log entries are this process's own,
      // so following the log will never bring it here.
      for (const [k, j] of firsts.entries()) {
        const outcome = outcomes[k]!;
        if ("error" in outcome) failed(j, outcome.error);
        else apply(j, outcome);
        await slice();
      }
    } catch (err) {
      for (const j of firsts) failed(j, err);
    }
    for (const j of repeats) {
      try {
        apply(j, await articles.upsert(withVector(j)));
      } catch (err) {
        failed(j, err);
      }
    }
    return {
      received: items.length,
      created: results.filter((r) => r.status === "created").length,
      updated: results.filter((r) => r.status === "updated").length,
      failed: results.filter((r) => r.status === "error").length,
      results,
    };
  }
}
