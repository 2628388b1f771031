/**
 * Which follows of a tracking link count as clicks. The redirect itself always happens (a reader
 * never loses the article); only counting is gated: readers count, robots, repeats and floods do
 * not. Rules and their reasons: docs/events-and-metrics.md, "Click counting".
 */
import { type Clock, KV_EXPIRY_SLACK_MS } from "../clock.ts";
import { sha256Hex } from "../crypto.ts";
import type { FixedWindowLimiter } from "../rate_limit.ts";
import type { ClickPayload } from "./tracking.ts";

/** Why a follow of a link was not counted; `counted` when it was. */
export type ClickVerdict = "counted" | "not_get" | "bot" | "expired" | "address_limit" | "duplicate";

/**
 * User agents of crawlers, link-preview fetchers (chat apps unfurling a pasted link) and
 * command-line HTTP tools: they fetch links, they are not readers. Matched case-insensitively
 * anywhere in the header. Headless browsers are not on it: they are also how real users'
 * automation and our own browser tests read pages.
 */
export const NON_READER_AGENTS: readonly string[] = [
  // Search and AI crawlers.
  "googlebot",
  "bingbot",
  "applebot",
  "duckduckbot",
  "yandexbot",
  "baiduspider",
  "petalbot",
  "gptbot",
  "claudebot",
  "perplexitybot",
  "amazonbot",
  "bytespider",
  "ccbot",
  "ahrefsbot",
  "semrushbot",
  "mj12bot",
  "crawler",
  "spider",
  "slurp",
  // Robots that sign with a contact URL ("compatible; Foobot/1.0; +https://..."): browsers never do.
  "+http",
  // Link-preview fetchers of chat and social apps.
  "slackbot",
  "slack-imgproxy",
  "twitterbot",
  "facebookexternalhit",
  "facebookcatalog",
  "meta-externalagent",
  "discordbot",
  "linkedinbot",
  "whatsapp",
  "telegrambot",
  "redditbot",
  "skypeuripreview",
  "embedly",
  "iframely",
  "pinterestbot",
  "vkshare",
  "mastodon",
  "bluesky",
  "google web preview",
  // Command-line and library HTTP clients: scripts, not readers.
  "curl/",
  "wget/",
  "python-requests",
  "python-urllib",
  "go-http-client",
  "libwww-perl",
  "httpie",
];
const NON_READER_RE = new RegExp(
  NON_READER_AGENTS.map((s) => s.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&")).join("|"),
  "i",
);

/** Whether a `User-Agent` names a crawler, link-preview fetcher or command-line tool. A missing one counts as a reader. */
export function isNonReaderAgent(userAgent: string | undefined): boolean {
  return userAgent !== undefined && NON_READER_RE.test(userAgent);
}

/** The last instant (unix seconds) a follow of this link still counts: its own expiry, or issue time + ttl. */
export function countsUntil(click: Pick<ClickPayload, "issuedAt" | "expiresAt">, linkTtlS: number): number {
  return click.expiresAt ?? click.issuedAt + linkTtlS;
}

/** Options of {@link ClickGate}. */
export interface ClickGateOptions {
  kv: Deno.Kv;
  clock: Clock;
  /** Counted follows per client address per window (over it: redirected, not counted). */
  perAddress: FixedWindowLimiter;
  /** A link followed again from the same address within this many seconds counts once. */
  dedupeWindowS: number;
  /** Counting lifetime of links that carry no expiry of their own (made before links had one). */
  linkTtlS: number;
}

const SEEN_PREFIX = "click_seen";

/**
 * Decides whether one follow of a tracking link is a click to record. Cheap checks first (method,
 * user agent, expiry), then the per-address limit, then the once-per-link-and-address dedupe,
 * which is one atomic KV insert, so concurrent repeats (in one process or many) count once.
 * KV grows by at most one small, expiring entry per counted click.
 */
export class ClickGate {
  constructor(private readonly opts: ClickGateOptions) {}

  /**
   * @param token the link's token as followed (the dedupe key is its hash)
   * @param address the client address, an IPv6 one as its /64 (routes/middleware/public_limits.ts `limitAddress`)
   */
  async verdict(
    click: ClickPayload,
    req: { method: string; userAgent?: string; address: string; token: string },
  ): Promise<ClickVerdict> {
    // HEAD comes from link unfurlers and prefetchers, not readers.
    if (req.method !== "GET") return "not_get";
    if (isNonReaderAgent(req.userAgent)) return "bot";
    const nowMs = this.opts.clock.now().getTime();
    if (nowMs > countsUntil(click, this.opts.linkTtlS) * 1000) return "expired";
    if (!(await this.opts.perAddress.hit(req.address)).allowed) return "address_limit";
    return await this.#firstSeen(req.token, req.address, nowMs) ? "counted" : "duplicate";
  }

  /**
   * Takes back the (link, address) mark of a click that was `counted` but could not be recorded, so
   * the reader's next follow counts it instead of being a duplicate of a click never stored.
   */
  async forget(token: string, address: string): Promise<void> {
    await this.opts.kv.delete(await seenKey(token, address));
  }

  /** Inserts the (link, address) mark unless a live one exists; true when this call inserted it. */
  async #firstSeen(token: string, address: string, nowMs: number): Promise<boolean> {
    const key = await seenKey(token, address);
    const windowMs = this.opts.dedupeWindowS * 1000;
    const entry = await this.opts.kv.get<number>(key);
    // KV's expireIn only sets the earliest deletion: the stored time decides.
    if (entry.value !== null && entry.value > nowMs) return false;
    const res = await this.opts.kv.atomic().check(entry).set(key, nowMs + windowMs, {
      expireIn: windowMs + KV_EXPIRY_SLACK_MS,
    }).commit();
    return res.ok;
  }
}

/** The KV key of one (link, address) mark: hashed, so KV holds no list of who followed what. */
async function seenKey(token: string, address: string): Promise<Deno.KvKey> {
  return [SEEN_PREFIX, await sha256Hex(`${token}\n${address}`)];
}
