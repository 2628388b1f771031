/**
 * One article with its licensed full text (REST `GET /v1/data-models/{dm}/article`, MCP
 * `get_article`, payproxy `/v2/article`). Who may read it is the caller's business: the routes
 * check the licence ({@link mayReadFullText}).
 */
import { searchErrors } from "../errors.ts";
import type { Clock } from "../../clock.ts";
import type { DataModel } from "../../store/mod.ts";
import { isLive } from "../store/retention.ts";
import { type Article, canonicalUrl } from "../store/articles.ts";
import type { SearchContext } from "../types.ts";
import { clipMarkdown, textToMarkdown } from "../../text/mod.ts";
import { MAX_TEXT_CHARACTERS } from "../result_options.ts";

/** An article with its text, as the routes answer it. */
export interface ArticleText {
  id: string;
  url: string;
  title: string;
  author?: string;
  site: string;
  site_domain: string;
  pubdate: string;
  pubdate_unix: number;
  categories?: string[];
  summary: string;
  /** The article body as clean Markdown. */
  text: string;
}

/** What highlights and full text read of an article: its plain body and its Markdown, if kept. */
export type BodyText = Pick<Article, "body" | "markdown">;

/** Whether a caller may read a data model's full text: its own tenant always, others when licensed. */
export function mayReadFullText(dm: DataModel, context: Pick<SearchContext, "tenantId">): boolean {
  return context.tenantId === dm.tenantId || dm.license === "full_text";
}

/** An article's full text as Markdown within `max` characters (its summary when the body is gone). */
export function fullText(article: BodyText | null | undefined, summary: string, max: number): string {
  const md = article?.markdown || textToMarkdown(article?.body || summary);
  return clipMarkdown(md, max);
}

/** No article at a URL (the URL is not echoed). */
export const articleNotFound = () => searchErrors.article_not_found();

/**
 * The article at `url` with its text cut to `max` characters. An article past the data model's
 * retention is not found, as it is in every ranking, though the sweep has not deleted it yet.
 * @throws {AppError} 404 when the URL is unreadable or holds no article the data model serves
 */
export async function articleWithText(
  search: { articleByUrl(dataModelId: string, url: string): Promise<Article | null> },
  dm: DataModel,
  url: string,
  { clock, max = MAX_TEXT_CHARACTERS }: { clock: Clock; max?: number },
): Promise<ArticleText> {
  let canonical: string;
  try {
    canonical = canonicalUrl(url);
  } catch {
    throw articleNotFound();
  }
  const a = await search.articleByUrl(dm.id, canonical);
  if (!a || !isLive(dm, a.pubdateUnix, clock)) throw articleNotFound();
  return {
    id: a.id,
    url: a.url,
    title: a.title,
    ...(a.author ? { author: a.author } : {}),
    site: a.site,
    site_domain: a.siteDomain,
    pubdate: a.pubdate,
    pubdate_unix: a.pubdateUnix,
    ...(a.categories?.length ? { categories: a.categories } : {}),
    summary: a.summary,
    text: fullText(a, a.summary, max),
  };
}
