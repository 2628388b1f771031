import { z } from "zod";
import type { Clock } from "../../clock.ts";
import { sha256Hex } from "../../crypto.ts";
import { newId } from "../../ids.ts";
import type { DataModel } from "../../store/mod.ts";
import { ArticleChangeLog, type ChangeLogHead, headKey } from "./change_log.ts";
import { clip, summarize } from "../text/summarize.ts";
import { clipMarkdown, safeMarkdown, withoutDisguise } from "../../text/mod.ts";

/**
 * Articles of a data model as stored in Deno KV.
 *
 * Keys: `["article", dmId, articleId]` holds the article; `["article_url", dmId, sha256(url)]`
 * holds its id, which makes ingestion idempotent on the URL. Every write and delete also logs
 * the change in the same commit (see change_log.ts). Values stay well under KV's 64 KiB: long
 * bodies are cut (at a sentence end where possible) and embeddings are int8 with a scale.
 */

/** Body characters kept. V8 stores non-Latin-1 strings as UTF-16, so 20k chars is <= 40 KB. */
export const MAX_BODY_CHARS = 20_000;
const MAX_TITLE = 500;
const MAX_AUTHOR = 200;
const MAX_PREVIEW = 320;
const MAX_SUMMARY = 600;

/** An embedding as stored: int8 values, one scale, and the provider that made it. */
export interface StoredEmbedding {
  model: string;
  dims: number;
  scale: number;
  /** Int8 values as bytes. */
  q: Uint8Array;
}

/**
 * An article's BM25F terms as stored with it, so an index is built without tokenising again:
 * its distinct terms joined by spaces and their per-field frequencies (little-endian uint16, one
 * per field per term). `v` names the tokeniser and field layout; another version is ignored.
 */
export interface StoredTerms {
  v: number;
  t: string;
  f: Uint8Array;
}

/** One article (`ar_`). */
export interface Article {
  id: string;
  dataModelId: string;
  url: string;
  title: string;
  author?: string;
  site: string;
  siteDomain: string;
  /** ISO 8601 UTC. */
  pubdate: string;
  pubdateUnix: number;
  image?: string;
  previewContent: string;
  summary: string;
  body: string;
  /**
   * The body as clean Markdown (headings, lists, links), when it came as HTML or Markdown; bounded
   * so the stored value stays under KV's limit with the plain body beside it.
   */
  markdown?: string;
  /** Section or topic labels (feed `<category>`, JSON Feed `tags`, sitemap news keywords, ingest). */
  categories?: string[];
  embedding?: StoredEmbedding;
  terms?: StoredTerms;
  createdAt: string;
  updatedAt: string;
}

const httpUrl = z.string().trim().max(2048, { error: "must be at most 2048 characters" }).refine((v) => {
  try {
    const u = new URL(v);
    return (u.protocol === "http:" || u.protocol === "https:") && u.hostname !== "";
  } catch {
    return false;
  }
}, { error: "must be an absolute http(s) URL" }).refine((v) => {
  // `https://dailyledger.example@evil.example/` reads as the first host and is the second.
  const u = URL.parse(v);
  return !u || (u.username === "" && u.password === "");
}, { error: "must not carry a user name or password" });

const text = (max: number) => z.string().max(max, { error: `must be at most ${max} characters` });

/** Most categories kept per article, and characters per category. */
export const MAX_CATEGORIES = 20;
export const MAX_CATEGORY_CHARS = 100;
const categoryList = z.array(
  z.string({ error: "must be a string" }).max(500, { error: "must be at most 500 characters" }),
  {
    error: "must be an array of strings",
  },
).max(200, { error: "at most 200 entries" });

/**
 * Categories as stored: without disguising characters (bidi controls, zero-width spaces), whitespace
 * collapsed, each at most {@link MAX_CATEGORY_CHARS} characters, duplicates (ignoring case) dropped,
 * at most {@link MAX_CATEGORIES}.
 */
export function cleanCategories(values: Iterable<string | null | undefined>): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const v of values) {
    const c = withoutDisguise(v ?? "").replace(/\s+/g, " ").trim().slice(0, MAX_CATEGORY_CHARS).trim();
    const key = categoryKey(c);
    if (!key || seen.has(key)) continue;
    seen.add(key);
    out.push(c);
    if (out.length >= MAX_CATEGORIES) break;
  }
  return out;
}

/** The form categories are compared in: case and diacritics folded, whitespace collapsed. */
export function categoryKey(value: string): string {
  return value.normalize("NFKD").replace(/\p{M}+/gu, "").toLowerCase().replace(/\s+/g, " ").trim();
}

/** One article as clients send it (bulk API, JSONL lines). Unknown fields are ignored. */
export const articleInputSchema = z.object({
  url: httpUrl,
  title: z.string().trim().min(1, { error: "must not be empty" }).max(MAX_TITLE, {
    error: `must be at most ${MAX_TITLE} characters`,
  }),
  author: text(MAX_AUTHOR).nullish(),
  site: text(200).nullish(),
  site_domain: text(253).nullish(),
  pubdate: z.union([z.string(), z.number()]).nullish(),
  pubdate_unix: z.number().nullish(),
  image: httpUrl.nullish(),
  image_url: httpUrl.nullish(),
  preview_content: text(5000).nullish(),
  summary: text(5000).nullish(),
  body: z.string().max(2_000_000, { error: "must be at most 2000000 characters" }).nullish(),
  content: z.string().max(2_000_000).nullish(),
  text: z.string().max(2_000_000).nullish(),
  categories: categoryList.nullish(),
  tags: categoryList.nullish(),
  /** The body as HTML: kept as Markdown (and as plain text when `body` is absent). */
  body_html: z.string().max(2_000_000, { error: "must be at most 2000000 characters" }).nullish(),
  /** The body as Markdown, kept for full text. */
  body_markdown: z.string().max(2_000_000, { error: "must be at most 2000000 characters" }).nullish(),
}).loose();
type ParsedInput = z.infer<typeof articleInputSchema>;
/** The known fields of an article input (without the index signature `.loose()` adds). */
export type ArticleInput = { [K in keyof ParsedInput as string extends K ? never : K]: ParsedInput[K] };

/**
 * The canonical form of an article URL for identity: lowercase scheme and host, no default port,
 * no fragment. Query strings are kept (some sites address articles by them).
 */
export function canonicalUrl(url: string): string {
  const u = new URL(url.trim());
  u.hash = "";
  if ((u.protocol === "http:" && u.port === "80") || (u.protocol === "https:" && u.port === "443")) u.port = "";
  return u.toString();
}

/** A host as a site domain: lowercase, without `www.`. */
export function domainOf(hostOrUrl: string): string {
  let host = hostOrUrl.trim().toLowerCase();
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(host)) {
    try {
      host = new URL(host).hostname;
    } catch {
      return "";
    }
  } else host = host.split(/[/?#]/)[0]!.replace(/:\d+$/, "");
  return host.replace(/^www\./, "").replace(/\.$/, "");
}

/** Parses a publication date (ISO 8601, RFC 2822, or unix seconds/milliseconds) to unix seconds. */
export function parsePubdate(value: string | number | null | undefined): number | undefined {
  if (value === null || value === undefined || value === "") return undefined;
  if (typeof value === "number" || /^\d{9,13}$/.test(String(value).trim())) {
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0) return undefined;
    return Math.floor(n > 1e11 ? n / 1000 : n);
  }
  const ms = Date.parse(String(value));
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/** A one-line label (title, author, site) as stored: no disguising characters, whitespace collapsed. */
export const cleanLabel = (value: string | null | undefined) =>
  withoutDisguise(value ?? "").replace(/\s+/g, " ").trim();

/** Cuts a body to {@link MAX_BODY_CHARS}, preferring the end of a sentence. */
export function cutBody(body: string): string {
  const b = body.replace(/\r\n?/g, "\n").replace(/[ \t]+/g, " ").replace(/\n{3,}/g, "\n\n").trim();
  if (b.length <= MAX_BODY_CHARS) return b;
  const head = b.slice(0, MAX_BODY_CHARS);
  const end = Math.max(head.lastIndexOf(". "), head.lastIndexOf(".\n"));
  return end > MAX_BODY_CHARS * 0.8 ? head.slice(0, end + 1) : head;
}

/** An item field that passed the schema but cannot be used; its message is public (names no input). */
export class ArticleInputError extends Error {
  override name = "ArticleInputError";
}

/**
 * Builds the stored article from an input (without id, timestamps or embedding), filling the
 * defaults: site domain from the URL, site name from the data model, pubdate now, extractive
 * summary and preview from the body.
 * @throws {ArticleInputError} when the pubdate is present but unreadable, or the title is only invisible characters
 */
export function normalizeArticle(
  dm: DataModel,
  input: ArticleInput,
  clock: Clock,
): Omit<Article, "id" | "createdAt" | "updatedAt" | "embedding"> {
  const url = canonicalUrl(input.url);
  const siteDomain = domainOf(input.site_domain || url) || domainOf(url);
  // Labels readers and agents see carry no bidi controls or invisible characters (core/text/disguise.ts).
  const site = cleanLabel(input.site) ||
    dm.sites.find((s) => s.domain === siteDomain || siteDomain.endsWith(`.${s.domain}`))?.name || siteDomain;
  let unix = parsePubdate(input.pubdate ?? undefined) ?? parsePubdate(input.pubdate_unix ?? undefined);
  if (unix === undefined && (input.pubdate || input.pubdate_unix)) {
    throw new ArticleInputError("pubdate: unreadable date");
  }
  unix ??= Math.floor(clock.now().getTime() / 1000);
  const body = cutBody(input.body ?? input.content ?? input.text ?? "");
  const title = cleanLabel(input.title);
  if (!title) throw new ArticleInputError("title: must not be empty");
  const summary = withoutDisguise(clip(input.summary?.trim() || summarize(title, body) || title, MAX_SUMMARY));
  const previewContent = withoutDisguise(clip(input.preview_content?.trim() || body || summary, MAX_PREVIEW));
  return {
    dataModelId: dm.id,
    url,
    title,
    author: cleanLabel(input.author) || undefined,
    site,
    siteDomain,
    pubdate: new Date(unix * 1000).toISOString(),
    pubdateUnix: unix,
    image: input.image ?? input.image_url ?? undefined,
    previewContent,
    summary,
    body,
    ...categoriesOf(input),
    ...markdownOf(input.body_markdown, body),
  };
}

// Bytes the stored body and Markdown take together at most: the rest of the value (title, terms,
// embedding, ...) fits in what remains of KV's 64 KiB.
const TEXT_BYTES = 48_000;
const MAX_MARKDOWN = 20_000;

/** Bytes V8's serializer writes for a string: one per character when all are Latin-1, else two. */
function serializedBytes(s: string): number {
  // deno-lint-ignore no-control-regex -- the Latin-1 range starts at U+0000 on purpose
  return /[^\x00-\xff]/.test(s) ? 2 * s.length : s.length;
}

function markdownOf(markdown: string | null | undefined, body: string): { markdown?: string } {
  // Markdown a caller sent carries no raw HTML or script links, like the Markdown converted from HTML.
  // (A head twice what is kept bounds the work: the rest is clipped below anyway.)
  const md = markdown &&
    safeMarkdown(markdown.slice(0, 2 * MAX_MARKDOWN).replace(/\r\n?/g, "\n")).replace(/\n{3,}/g, "\n\n").trim();
  if (!md) return {};
  const room = TEXT_BYTES - serializedBytes(body);
  const max = Math.min(MAX_MARKDOWN, Math.floor(room / (serializedBytes(md) === md.length ? 1 : 2)));
  const kept = clipMarkdown(md, max);
  return kept ? { markdown: kept } : {};
}

function categoriesOf(input: ArticleInput): { categories?: string[] } {
  const list = cleanCategories([...(input.categories ?? []), ...(input.tags ?? [])]);
  return list.length ? { categories: list } : {};
}

/** The text an article is embedded from: the title twice (it names the topic), summary, opening. */
export function embeddingText(a: Pick<Article, "title" | "summary" | "body">): string {
  return `${a.title}. ${a.title}. ${a.summary} ${a.body.slice(0, 3000)}`;
}

/**
 * Most articles per atomic commit in {@link ArticleRepo.upsertMany}: KV takes 100 checks per
 * commit (one or two per article, one for the change-log head) and 800 KB.
 */
export const UPSERT_BATCH = 48;
// Estimated bytes per commit in upsertMany (strings counted at two bytes a character), well
// under KV's 800 KB: a commit closes early when its articles are large.
const UPSERT_COMMIT_BYTES = 400_000;

/** An upper estimate of an article's stored size. */
function estimatedBytes(a: Omit<Article, "id" | "createdAt" | "updatedAt">): number {
  return 2 * (a.url.length + a.title.length + a.summary.length + a.previewContent.length + a.body.length +
        (a.terms?.t.length ?? 0) + (a.categories?.join("").length ?? 0)) +
    (a.terms?.f.length ?? 0) + (a.embedding?.q.length ?? 0) + 1024;
}

const articleKey = (dmId: string, id: string) => ["article", dmId, id];
const urlKey = (dmId: string, urlHash: string) => ["article_url", dmId, urlHash];

/** Outcome of one upsert. */
export interface UpsertOutcome {
  article: Article;
  /** The article as it was before, when the URL was known. */
  previous?: Article;
  created: boolean;
}

/** An item {@link ArticleRepo.upsertMany} did not store (nothing of it was written). */
export interface UpsertFailure {
  error: unknown;
}

/** Article persistence in Deno KV. */
export class ArticleRepo {
  readonly changes: ArticleChangeLog;

  /**
   * @param writer names this writer in the change log (its own engine skips its entries)
   */
  constructor(
    private readonly kv: Deno.Kv,
    private readonly clock: Clock,
    readonly writer: string = crypto.randomUUID(),
  ) {
    this.changes = new ArticleChangeLog(kv);
  }

  /** Looks an article up by id. */
  async get(dmId: string, id: string): Promise<Article | null> {
    return (await this.kv.get<Article>(articleKey(dmId, id))).value;
  }

  /** Looks an article up by URL. */
  async getByUrl(dmId: string, url: string): Promise<Article | null> {
    const id = (await this.kv.get<string>(urlKey(dmId, await sha256Hex(canonicalUrl(url))))).value;
    return id ? await this.get(dmId, id) : null;
  }

  /** Many articles by id, in order; null where an article is missing. Ten per read, all reads in flight at once. */
  async getMany(dmId: string, ids: string[]): Promise<(Article | null)[]> {
    const reads = [];
    for (let i = 0; i < ids.length; i += 10) {
      reads.push(this.kv.getMany<Article[]>(ids.slice(i, i + 10).map((id) => articleKey(dmId, id))));
    }
    return (await Promise.all(reads)).flat().map((r) => r.value);
  }

  /**
   * Inserts or replaces the article with this URL, atomically: a new URL gets a new `ar_` id, a
   * known URL keeps its id and `createdAt`. Concurrent writers of the same URL (or of the same
   * data model's change log) retry.
   */
  async upsert(fields: Omit<Article, "id" | "createdAt" | "updatedAt">): Promise<UpsertOutcome> {
    const dmId = fields.dataModelId;
    const hash = await sha256Hex(fields.url);
    const uKey = urlKey(dmId, hash);
    for (let attempt = 0; attempt < 8; attempt++) {
      const now = this.clock.now();
      const iso = now.toISOString();
      const [known, head] = await this.kv.getMany<[string, ChangeLogHead]>([uKey, headKey(dmId)]);
      if (known.value) {
        const aKey = articleKey(dmId, known.value);
        const prev = await this.kv.get<Article>(aKey);
        const article: Article = {
          ...fields,
          id: known.value,
          createdAt: prev.value?.createdAt ?? iso,
          updatedAt: iso,
        };
        const op = this.kv.atomic().check(known).check(prev).set(aKey, article);
        this.changes.stage(op, dmId, head, [{ id: article.id, url: article.url, op: "upsert" }], this.writer, +now);
        if ((await op.commit()).ok) return { article, previous: prev.value ?? undefined, created: !prev.value };
        continue;
      }
      const id = newId("ar", this.clock);
      const article: Article = { ...fields, id, createdAt: iso, updatedAt: iso };
      const op = this.kv.atomic().check(known).set(uKey, id).set(articleKey(dmId, id), article);
      this.changes.stage(op, dmId, head, [{ id, url: article.url, op: "upsert" }], this.writer, +now);
      if ((await op.commit()).ok) return { article, created: true };
    }
    throw new Error("article upsert kept conflicting; try again");
  }

  /**
   * {@link upsert} for many articles of one data model with distinct URLs, in a few KV round
   * trips: URL keys and known articles are read ten at a time (all reads in flight together),
   * writes go out up to {@link UPSERT_BATCH} articles (and about 400 KB) per atomic commit, each
   * checked like a single upsert. A commit that loses a race is redone one article at a time.
   * Never throws once a commit went through: the caller must learn what was stored (its index
   * follows its own writes; the change log does not replay them to it).
   * @returns the outcomes, in the order of `list`; a failure for each item not stored
   * @throws when reading fails, before anything is written
   */
  async upsertMany(
    list: Omit<Article, "id" | "createdAt" | "updatedAt">[],
  ): Promise<(UpsertOutcome | UpsertFailure)[]> {
    const out: (UpsertOutcome | UpsertFailure)[] = new Array(list.length);
    if (list.length === 0) return out;
    const dmId = list[0]!.dataModelId;
    const uKeys = await Promise.all(list.map(async (f) => urlKey(dmId, await sha256Hex(f.url))));
    // Reads ten keys at a time (KV's getMany limit), all in flight at once.
    const tens = <T>(n: number, read: (from: number) => Promise<T[]>) =>
      Promise.all(Array.from({ length: Math.ceil(n / 10) }, (_, k) => read(k * 10))).then((r) => r.flat());
    const known = await tens(list.length, (i) => this.kv.getMany<string[]>(uKeys.slice(i, i + 10)));
    const prevs: (Deno.KvEntryMaybe<Article> | null)[] = new Array(list.length).fill(null);
    const knownAt = known.flatMap((k, i) => (k.value ? [i] : []));
    const got = await tens(
      knownAt.length,
      (i) => this.kv.getMany<Article[]>(knownAt.slice(i, i + 10).map((j) => articleKey(dmId, known[j]!.value!))),
    );
    knownAt.forEach((j, k) => prevs[j] = got[k]!);
    const nowDate = this.clock.now();
    const now = nowDate.toISOString();
    let head = await this.changes.head(dmId);
    let start = 0;
    try {
      for (let end = 0; start < list.length; start = end) {
        const op = this.kv.atomic();
        const pending: [number, UpsertOutcome][] = [];
        let bytes = 0;
        for (end = start; end < list.length && end - start < UPSERT_BATCH; end++) {
          bytes += estimatedBytes(list[end]!);
          if (bytes > UPSERT_COMMIT_BYTES && end > start) break;
          const fields = list[end]!, k = known[end]!, prev = prevs[end];
          if (k.value && prev) {
            const article: Article = {
              ...fields,
              id: k.value,
              createdAt: prev.value?.createdAt ?? now,
              updatedAt: now,
            };
            op.check(k).check(prev).set(prev.key, article);
            pending.push([end, { article, previous: prev.value ?? undefined, created: !prev.value }]);
          } else {
            const article: Article = { ...fields, id: newId("ar", this.clock), createdAt: now, updatedAt: now };
            op.check(k).set(uKeys[end]!, article.id).set(articleKey(dmId, article.id), article);
            pending.push([end, { article, created: true }]);
          }
        }
        const logged = pending.map(([, o]) => ({ id: o.article.id, url: o.article.url, op: "upsert" as const }));
        const next = this.changes.stage(op, dmId, head, logged, this.writer, +nowDate);
        const res = await op.commit();
        if (res.ok) {
          for (const [i, o] of pending) out[i] = o;
          head = { key: head.key, value: next, versionstamp: res.versionstamp };
        } else {
          for (const [i] of pending) out[i] = await this.upsert(list[i]!).catch((error: unknown) => ({ error }));
          head = await this.changes.head(dmId);
        }
      }
    } catch (error) {
      // A read or a commit failed: the items not decided yet are reported failed (a retry rewrites them).
      for (let i = start; i < list.length; i++) out[i] ??= { error };
    }
    return out;
  }

  /** Replaces only the stored embedding (re-embedding after a provider change). */
  async setEmbedding(dmId: string, id: string, embedding: StoredEmbedding): Promise<void> {
    const key = articleKey(dmId, id);
    const cur = await this.kv.get<Article>(key);
    if (!cur.value) return;
    await this.kv.atomic().check(cur).set(key, { ...cur.value, embedding }).commit();
  }

  /** Deletes articles (and their URL keys), five per atomic write, logging each deletion. */
  async deleteMany(dmId: string, articles: { id: string; url: string }[]): Promise<void> {
    let head = await this.changes.head(dmId);
    for (let i = 0; i < articles.length; i += 5) {
      const chunk = articles.slice(i, i + 5);
      const hashes = await Promise.all(chunk.map((a) => sha256Hex(a.url)));
      for (let attempt = 0;; attempt++) {
        const op = this.kv.atomic();
        chunk.forEach((a, j) => op.delete(articleKey(dmId, a.id)).delete(urlKey(dmId, hashes[j]!)));
        const logged = chunk.map((a) => ({ id: a.id, url: a.url, op: "delete" as const }));
        const at = this.clock.now().getTime();
        const next = this.changes.stage(op, dmId, head, logged, this.writer, at);
        const res = await op.commit();
        if (res.ok) {
          head = { key: head.key, value: next, versionstamp: res.versionstamp };
          break;
        }
        // Another writer moved the log head: read it again and retry.
        if (attempt >= 8) throw new Error("article delete kept conflicting; try again");
        head = await this.changes.head(dmId);
      }
    }
  }

  /** Streams every article of a data model, read `batchSize` at a time. */
  async *list(dmId: string, batchSize = 500): AsyncIterable<Article> {
    for await (const e of this.kv.list<Article>({ prefix: ["article", dmId] }, { batchSize })) yield e.value;
  }

  /** Ids of the data models that hold at least one article. */
  async dataModelIds(): Promise<string[]> {
    const out: string[] = [];
    let after: string | undefined;
    // Hop from one data model to the next instead of listing every article: `true` sorts after
    // every string key part, so it is an exclusive upper bound for one model's URL keys.
    while (true) {
      const iter = this.kv.list<string>({
        start: after === undefined ? ["article_url"] : ["article_url", after, true],
        end: ["article_url", true],
      }, { limit: 1 });
      let found: Deno.KvKey | undefined;
      for await (const e of iter) found = e.key;
      if (!found) break;
      after = String(found[1]);
      out.push(after);
    }
    return out;
  }
}
