/** One parse job and its run on this thread (the worker's body, and the inline parser's). */
import { type FeedItem, parseSourceDocument } from "./parse.ts";
import { type ChildSitemap, parseSitemapIndex } from "./sitemap_index.ts";
import type { SourceKind } from "./source.ts";

/** One parse, as sent to a worker. */
export type ParseJob =
  | { op: "document"; kind: SourceKind; text: string; maxItems: number }
  | { op: "index"; text: string; url: string; maxChildren: number };

/** Runs a parse job on this thread. */
export function runParseJob(job: ParseJob): FeedItem[] | ChildSitemap[] {
  return job.op === "document"
    ? parseSourceDocument(job.kind, job.text, job.maxItems)
    : parseSitemapIndex(job.text, job.url).slice(0, job.maxChildren);
}
