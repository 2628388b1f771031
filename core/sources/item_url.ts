/**
 * The identity of a feed item's article: the page's `<link rel=canonical>` when we read the page,
 * else the item URL without tracking parameters. Two feeds (or one feed over time) linking the
 * same story with different campaign tags then update one article instead of adding two.
 */
import { canonicalUrl, domainOf } from "../search/mod.ts";

/** Query parameters that only track a click: `utm_*` and the named ones. */
const TRACKING_EXACT = new Set([
  "fbclid",
  "gclid",
  "dclid",
  "gbraid",
  "wbraid",
  "msclkid",
  "yclid",
  "twclid",
  "igshid",
  "mc_cid",
  "mc_eid",
  "_ga",
  "_gl",
  "ref_src",
  "ref_url",
  "cmpid",
  "mkt_tok",
  "oly_anon_id",
  "oly_enc_id",
  "vero_id",
  "_hsenc",
  "_hsmi",
  "spm",
]);

/** Whether a query parameter name only tracks (`utm_source`, `fbclid`, ...). */
export function isTrackingParam(name: string): boolean {
  const n = name.toLowerCase();
  return n.startsWith("utm_") || TRACKING_EXACT.has(n);
}

/**
 * The article identity of a URL: {@link canonicalUrl} (no fragment, no default port, lowercase
 * host) without tracking parameters; other parameters keep their order.
 * @throws {TypeError} when `url` is not an absolute URL
 * @example withoutTracking("https://a.example/x?utm_source=rss&id=7#top") // "https://a.example/x?id=7"
 */
export function withoutTracking(url: string): string {
  const u = new URL(canonicalUrl(url));
  for (const name of [...u.searchParams.keys()]) if (isTrackingParam(name)) u.searchParams.delete(name);
  if (u.search === "?") u.search = "";
  return u.toString();
}

const LINK_TAG = /<link\b[^>]*>/gi;
const attr = (tag: string, name: string) =>
  tag.match(new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, "i"))?.slice(1).find((v) =>
    v !== undefined
  );

/**
 * The `<link rel=canonical>` of a page, resolved against the page URL, when it is an http(s) URL
 * on the same site (same domain without `www.`). A canonical pointing at another site is ignored:
 * a page must not be able to overwrite another site's article in the data model.
 */
export function canonicalLink(html: string, pageUrl: string): string | undefined {
  const head = html.slice(0, 200_000);
  // A tag ends at a `>`: past the last one none can match, and there each `<link` scanned to the end
  // of the head for one (2.6 s for a page of `<link` repeated).
  const tagged = head.slice(0, head.lastIndexOf(">") + 1);
  for (const tag of tagged.match(LINK_TAG) ?? []) {
    const rel = attr(tag, "rel")?.toLowerCase().split(/\s+/);
    if (!rel?.includes("canonical")) continue;
    const href = attr(tag, "href");
    if (!href) return undefined;
    try {
      const abs = new URL(href.replace(/&amp;/g, "&"), pageUrl);
      if (abs.protocol !== "http:" && abs.protocol !== "https:") return undefined;
      if (domainOf(abs.hostname) !== domainOf(new URL(pageUrl).hostname)) return undefined;
      return withoutTracking(abs.toString());
    } catch {
      return undefined;
    }
  }
  return undefined;
}
