/**
 * Signed tracking and image links.
 *
 * Token: `{kid}.{payload}.{mac}`; `payload` is base64url JSON, `mac` the first 16 bytes of
 * HMAC-SHA256 over `{purpose}.{kid}.{payload}` with the key `kid` names. The purpose (`r` for the
 * click redirect, `img` for image sources) keeps a token of one kind from being replayed as the
 * other. Keys live in Deno KV, are created once, and rotate with `link-key rotate` (admin): new links use
 * the new key, links already handed out keep verifying with the old ones.
 */
import { Buffer } from "node:buffer";
import { timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { Clock } from "../clock.ts";
import { base64url, fromBase64url, HmacSha256, randomBytes } from "../crypto.ts";
import { unixSeconds } from "../clock.ts";
import type { LinkArticle, LinkBuilder, LinkContext, LinkPlacement } from "./links.ts";
import { boundedCache } from "../bounded_cache.ts";

const CURRENT_KEY = ["link_key_current"] as const;
const KEY_PREFIX = ["link_key"] as const;
const MAC_BYTES = 16;
const IMAGE_LINK_MEMO = 10_000;
/** How long a click link counts clicks unless told otherwise (CLICK_LINK_TTL_S). */
export const DEFAULT_CLICK_TTL_S = 7 * 86_400;
// Verifying a token with an unknown kid reloads keys (another process may have rotated), at most this often.
const RELOAD_INTERVAL_MS = 10_000;
// A signing key rotated by another process (the admin CLI) is taken up this long after at most.
const CURRENT_REFRESH_MS = 60_000;

interface StoredKey {
  kid: string;
  secret: string;
  createdAt: string;
}

/** What a click token names. */
export interface ClickPayload {
  /** Data model id. */
  dataModelId: string;
  articleId: string;
  /** The article URL: the only place the redirect may send the browser. */
  url: string;
  tenantId?: string;
  caller?: string;
  requestId?: string;
  position?: number;
  /** The widget that showed the link. */
  widgetId?: string;
  /** The AI model whose answer cited the article. */
  aiModelId?: string;
  /** The reader's widget session. */
  sessionId?: string;
  /** The widget's placement fields. */
  placement?: LinkPlacement;
  /** Unix seconds the link was made. */
  issuedAt: number;
  /**
   * Unix seconds after which a follow still redirects but no longer counts as a click. Absent on
   * links made before links carried one (core/links/click_gate.ts then uses issue time + ttl).
   */
  expiresAt?: number;
}

/** What an image token names. */
export interface ImagePayload {
  /** The origin image URL. */
  src: string;
}

const httpUrl = z.string().max(8192).refine((v) => {
  try {
    const u = new URL(v);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
});

const clickWire = z.object({
  d: z.string().max(256),
  a: z.string().max(256),
  u: httpUrl,
  t: z.string().max(64).optional(),
  c: z.string().max(256).optional(),
  r: z.string().max(128).optional(),
  p: z.number().int().min(0).max(100_000).optional(),
  w: z.string().max(128).optional(),
  g: z.string().max(128).optional(),
  s: z.string().max(128).optional(),
  m: z.object({
    placement_id: z.string().max(128).optional(),
    deployment_type: z.string().max(64).optional(),
    creative_id: z.string().max(128).optional(),
    line_item_id: z.string().max(128).optional(),
    publisher_id: z.string().max(128).optional(),
  }).optional(),
  i: z.number().int().min(0),
  x: z.number().int().min(0).optional(),
});
const imageWire = z.object({ s: httpUrl });

/** The placement fields that are set, trimmed to what the verifier accepts; undefined when none is. */
function placementWire(p: LinkPlacement | undefined): LinkPlacement | undefined {
  if (!p) return undefined;
  const out: LinkPlacement = {};
  for (const [k, v] of Object.entries(p) as [keyof LinkPlacement, string | undefined][]) {
    if (v) out[k] = v.slice(0, k === "deployment_type" ? 64 : 128);
  }
  return Object.keys(out).length ? out : undefined;
}

/** The HMAC keys for links, kept in KV and cached in memory. */
export class LinkKeys {
  readonly #kv: Deno.Kv;
  readonly #clock: Clock;
  readonly #keys = new Map<string, Mac>();
  #current?: string;
  #lastReload = -Infinity;
  #refreshing: Promise<void> | null = null;

  constructor(kv: Deno.Kv, clock: Clock) {
    this.#kv = kv;
    this.#clock = clock;
  }

  /** Loads the keys, creating the first one if the store has none. Idempotent; safe across processes. */
  async load(): Promise<void> {
    while (true) {
      const current = await this.#kv.get<string>(CURRENT_KEY);
      if (current.value) break;
      const key = this.#newKey();
      const res = await this.#kv.atomic()
        .check({ key: CURRENT_KEY, versionstamp: null })
        .set([...KEY_PREFIX, key.kid], key)
        .set(CURRENT_KEY, key.kid)
        .commit();
      if (res.ok) break; // otherwise another process created it first: read theirs
    }
    await this.#reload();
  }

  /**
   * Makes a new key the signing key; older keys stay valid for verification.
   * @returns the new key id.
   */
  async rotate(): Promise<string> {
    const key = this.#newKey();
    await this.#kv.atomic().set([...KEY_PREFIX, key.kid], key).set(CURRENT_KEY, key.kid).commit();
    await this.#reload();
    return key.kid;
  }

  /** Key ids and creation times, current first. */
  async list(): Promise<{ kid: string; createdAt: string; current: boolean }[]> {
    const current = (await this.#kv.get<string>(CURRENT_KEY)).value;
    const out: { kid: string; createdAt: string; current: boolean }[] = [];
    for await (const e of this.#kv.list<StoredKey>({ prefix: KEY_PREFIX })) {
      out.push({ kid: e.value.kid, createdAt: e.value.createdAt, current: e.value.kid === current });
    }
    return out.sort((a, b) => Number(b.current) - Number(a.current) || b.createdAt.localeCompare(a.createdAt));
  }

  /**
   * The signing key. Once a minute it also starts a reload in the background, so a rotation made
   * by another process reaches this one's new links. @throws {Error} before {@link load} resolved.
   */
  current(): { kid: string; mac: Mac } {
    if (!this.#current) throw new Error("Link keys are not loaded: await deps.links.init() at start");
    const current = { kid: this.#current, mac: this.#keys.get(this.#current)! };
    void this.refresh();
    return current;
  }

  /** Waits for a reload under way and starts no more (before the store closes). */
  async close(): Promise<void> {
    this.#lastReload = Infinity;
    await this.#refreshing;
  }

  /** Reloads the keys when the last load is a minute old (one reload at a time; a failed one is retried a minute later). */
  refresh(): Promise<void> {
    if (this.#refreshing) return this.#refreshing;
    if (this.#clock.now().getTime() - this.#lastReload < CURRENT_REFRESH_MS) return Promise.resolve();
    this.#refreshing = this.#reload().catch(() => {}).finally(() => this.#refreshing = null);
    return this.#refreshing;
  }

  /** The key `kid`, reloading once in a while when it is unknown. */
  async get(kid: string): Promise<Mac | undefined> {
    const known = this.#keys.get(kid);
    if (known) return known;
    const now = this.#clock.now().getTime();
    if (now - this.#lastReload < RELOAD_INTERVAL_MS) return undefined;
    await this.#reload();
    return this.#keys.get(kid);
  }

  async #reload(): Promise<void> {
    this.#lastReload = this.#clock.now().getTime();
    for await (const e of this.#kv.list<StoredKey>({ prefix: KEY_PREFIX })) {
      if (!this.#keys.has(e.value.kid)) this.#keys.set(e.value.kid, new Mac(fromBase64url(e.value.secret)));
    }
    const current = (await this.#kv.get<string>(CURRENT_KEY)).value;
    if (current && this.#keys.has(current)) this.#current = current;
  }

  #newKey(): StoredKey {
    return {
      kid: `k${base64url(randomBytes(4))}`,
      secret: base64url(randomBytes(32)),
      createdAt: this.#clock.now().toISOString(),
    };
  }
}

/** A link key's MAC: the first {@link MAC_BYTES} bytes of HMAC-SHA256 over `purpose.kid.payload`. */
class Mac {
  readonly #hmac: HmacSha256;

  constructor(secret: Uint8Array) {
    this.#hmac = new HmacSha256(secret);
  }

  tag(purpose: string, kid: string, payload: string): Buffer {
    return this.#hmac.digest(`${purpose}.${kid}.${payload}`).subarray(0, MAC_BYTES);
  }
}

/**
 * The {@link LinkBuilder}: signs click and image tokens, and verifies them for the `/r` and `/img`
 * routes. Call {@link init} once at start, before the first link is built.
 */
export class SignedLinks implements LinkBuilder {
  readonly keys: LinkKeys;
  readonly #baseUrl: string;
  readonly #clock: Clock;
  readonly #clickTtlS: number;
  readonly #imageLinks = boundedCache<string, string>({ max: IMAGE_LINK_MEMO });
  #imageKid?: string;

  /** @param clickTtlS how long a click link counts clicks (it keeps redirecting after) */
  constructor(
    { kv, clock, baseUrl, clickTtlS = DEFAULT_CLICK_TTL_S }: {
      kv: Deno.Kv;
      clock: Clock;
      baseUrl: string;
      clickTtlS?: number;
    },
  ) {
    this.keys = new LinkKeys(kv, clock);
    this.#baseUrl = baseUrl.replace(/\/+$/, "");
    this.#clock = clock;
    this.#clickTtlS = clickTtlS;
  }

  /** Loads (or creates) the signing keys. */
  init(): Promise<void> {
    return this.keys.load();
  }

  /** Waits for a key reload under way (before the store closes). */
  close(): Promise<void> {
    return this.keys.close();
  }

  /** @inheritdoc */
  trackingUrl(article: LinkArticle, ctx: LinkContext): string {
    const dataModelId = article.dataModelId ?? ctx.dataModelId;
    if (!dataModelId) throw new Error("trackingUrl() needs the data model id on the article or in the context");
    const issuedAt = unixSeconds(this.#clock);
    const wire: z.infer<typeof clickWire> = {
      d: dataModelId,
      a: article.id,
      u: article.url,
      i: issuedAt,
      x: issuedAt + this.#clickTtlS,
    };
    // Trimmed to what the verifier accepts, so a link we sign always verifies.
    if (ctx.tenantId) wire.t = ctx.tenantId.slice(0, 64);
    if (ctx.caller) wire.c = ctx.caller.slice(0, 256);
    if (ctx.requestId) wire.r = ctx.requestId.slice(0, 128);
    if (ctx.position !== undefined) wire.p = Math.min(100_000, Math.max(0, Math.trunc(ctx.position)));
    if (ctx.widgetId) wire.w = ctx.widgetId.slice(0, 128);
    if (ctx.aiModelId) wire.g = ctx.aiModelId.slice(0, 128);
    if (ctx.sessionId) wire.s = ctx.sessionId.slice(0, 128);
    const placement = placementWire(ctx.placement);
    if (placement) wire.m = placement;
    return `${this.#baseUrl}/r/${this.#sign("r", wire)}`;
  }

  /** @inheritdoc */
  imageUrl(article: { image?: string }): string | undefined {
    const src = article.image;
    if (!src) return undefined;
    // Image links depend only on the source and the key: popular articles sign once.
    const kid = this.keys.current().kid;
    if (kid !== this.#imageKid) {
      this.#imageLinks.clear();
      this.#imageKid = kid;
    }
    let url = this.#imageLinks.get(src);
    if (url === undefined) {
      if (!httpUrl.safeParse(src).success) return undefined;
      url = `${this.#baseUrl}/img?src=${this.#sign("img", { s: src })}`;
      this.#imageLinks.set(src, url);
    }
    return url;
  }

  /** Verifies a click token. @returns its payload, or `null` when it is malformed or its MAC is wrong. */
  async verifyClick(token: string): Promise<ClickPayload | null> {
    const wire = await this.#verify("r", token);
    const parsed = clickWire.safeParse(wire);
    if (!parsed.success) return null;
    const w = parsed.data;
    return {
      dataModelId: w.d,
      articleId: w.a,
      url: w.u,
      tenantId: w.t,
      caller: w.c,
      requestId: w.r,
      position: w.p,
      widgetId: w.w,
      ...(w.g !== undefined ? { aiModelId: w.g } : {}),
      sessionId: w.s,
      placement: w.m,
      issuedAt: w.i,
      ...(w.x !== undefined ? { expiresAt: w.x } : {}),
    };
  }

  /** Verifies an image token. @returns its payload, or `null`. */
  async verifyImage(token: string): Promise<ImagePayload | null> {
    const parsed = imageWire.safeParse(await this.#verify("img", token));
    return parsed.success ? { src: parsed.data.s } : null;
  }

  #sign(purpose: string, wire: unknown): string {
    const { kid, mac } = this.keys.current();
    const payload = Buffer.from(JSON.stringify(wire)).toString("base64url");
    return `${kid}.${payload}.${mac.tag(purpose, kid, payload).toString("base64url")}`;
  }

  async #verify(purpose: string, token: string): Promise<unknown> {
    if (token.length > 16_384) return null;
    const parts = token.split(".");
    if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) return null;
    const [kid, payload, sig] = parts as [string, string, string];
    const mac = await this.keys.get(kid);
    if (!mac) return null;
    // Compare the text, not decoded bytes: base64url's spare low bits would otherwise let several
    // spellings of one tag verify. Lengths are public (fixed tag size); the comparison is constant-time.
    const given = Buffer.from(sig);
    const want = Buffer.from(mac.tag(purpose, kid, payload).toString("base64url"));
    if (given.length !== want.length || !timingSafeEqual(given, want)) return null;
    try {
      return JSON.parse(new TextDecoder().decode(fromBase64url(payload)));
    } catch {
      return null;
    }
  }
}
