/**
 * HTML to clean Markdown for an article's licensed full text: headings, paragraphs, lists, quotes,
 * code, emphasis and links are kept; scripts, navigation, forms, share and newsletter boxes and
 * every other kind of page furniture are dropped. Links keep only http(s) targets (resolved
 * against the article URL), so no `javascript:` or `data:` link reaches an agent.
 */
import { parseHTML } from "linkedom";
import { bodyToMarkdown } from "./markdown_dom.ts";

// deno-lint-ignore no-explicit-any
type Node = any;

/**
 * Converts HTML to Markdown.
 * @param baseUrl resolves relative links; links that are not http(s) keep only their text
 * @example htmlToMarkdown('<h2>Hi</h2><p>See <a href="/x">this</a>.</p>', "https://a.example/") // "## Hi\n\nSee [this](https://a.example/x)."
 */
export function htmlToMarkdown(html: string, baseUrl?: string): string {
  const { document } = (parseHTML as unknown as (html: string) => { document: Node })(
    `<!doctype html><html><body>${html}</body></html>`,
  );
  return bodyToMarkdown(document.body, baseUrl);
}
