/**
 * Text renderings of tool results, for clients that show `content` rather than
 * `structuredContent`: one block per article (title, author, date, link), an answer with its
 * sources, and short lists.
 */
import type { SearchResponse, SearchResult } from "../../core/search/mod.ts";

/** A tool result: structured content plus its text rendering. */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent: Record<string, unknown>;
}

/** The result of a tool, with `text` as its rendering. */
export const toolResult = (structured: Record<string, unknown>, text: string): ToolResult => ({
  content: [{ type: "text", text }],
  structuredContent: structured,
});

/** One article as a block. */
function articleBlock(r: SearchResult, n: number): string {
  const byline = [r.author, r.pubdate?.slice(0, 10), r.site ?? r.site_domain].filter(Boolean).join(" · ");
  const lines = [`${n}. ${r.title ?? "(untitled)"}`];
  if (byline) lines.push(`   ${byline}`);
  if (r.summary) lines.push(`   ${r.summary}`);
  for (const h of r.highlights ?? []) lines.push(`   > ${h.text}`);
  if (r.text) lines.push("", r.text);
  lines.push(`   Link: ${r.source_url ?? r.url ?? ""}`);
  return lines.join("\n");
}

/** A SearchResponse as text. */
export function renderSearch(out: SearchResponse): string {
  const { results, message } = out.response;
  if (results.length === 0) return `No articles found. ${message}`;
  return [...results.map((r, i) => articleBlock(r, i + 1)), "", message].join("\n\n").replace(/\n{3,}/g, "\n\n");
}

/** An article with its text. */
export function renderArticle(
  a: { title: string; author?: string; pubdate: string; url: string; text: string },
): string {
  const byline = [a.author, a.pubdate.slice(0, 10)].filter(Boolean).join(" · ");
  return `# ${a.title}\n${byline ? `${byline}\n` : ""}Link: ${a.url}\n\n${a.text}`;
}

/** A cited source of an answer, as the answer engine may give it. */
interface Citation {
  title?: string;
  url?: string;
  source_url?: string;
  author?: string;
  pubdate?: string;
}

/** An answer and its citations as text. */
export function renderAnswer(message: string, citations: Citation[] | undefined): string {
  if (!citations?.length) return message;
  const sources = citations.map((c, i) => {
    const byline = [c.author, c.pubdate?.slice(0, 10)].filter(Boolean).join(" · ");
    return `[${i + 1}] ${c.title ?? "(untitled)"}${byline ? ` (${byline})` : ""}\n    Link: ${
      c.source_url ?? c.url ?? ""
    }`;
  });
  return `${message}\n\nSources:\n${sources.join("\n")}`;
}

/** A list of models as text: `id  name  (price)`. */
export function renderModels(
  kind: string,
  models: { id: string; name: string; price_usd?: string; top_categories?: { category: string }[] }[],
): string {
  if (models.length === 0) return `No ${kind} available.`;
  return models.map((m) => {
    const categories = m.top_categories?.length
      ? `; categories: ${m.top_categories.map((c) => c.category).join(", ")}`
      : "";
    return `- ${m.id}: ${m.name}${m.price_usd ? ` (${m.price_usd} USD per call)` : ""}${categories}`;
  }).join("\n");
}

/** A balance as text: the total, then each plan. */
export function renderBalance(
  b: { balance_usd: string; plans: { plan_id: string; plan_name: string | null; remaining_usd: string }[] },
): string {
  const lines = [`Balance: ${b.balance_usd} USD`];
  for (const p of b.plans) lines.push(`- ${p.plan_name ?? p.plan_id} (${p.plan_id}): ${p.remaining_usd} USD`);
  if (b.plans.length === 0) lines.push("No plan credit: buy a credit plan, or pay per call.");
  return lines.join("\n");
}
