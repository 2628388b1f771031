/**
 * The payment-proxy request signature (spec 5.2): header form, canonical string, signer and verifier.
 *
 * Header: `zc-signature: t=<unix-seconds>,kid=<key-id>,v1=<hex>`.
 * Canonical string: six fields joined by `\n`:
 *
 *   t               exactly as it appears in the header
 *   METHOD          upper case
 *   path?query      the request target as the URL serializes it (see {@link pathAndQuery})
 *   sha256(body)    lowercase hex SHA-256 of the raw body bytes (of zero bytes when empty)
 *   zc-request-id   required
 *   zc-agent-id     the empty string when absent
 *
 * `v1` = lowercase hex HMAC-SHA256(key = UTF-8 bytes of the seller's secret, canonical string).
 * The MAC runs on every request, so it is computed synchronously from pad states hashed once per
 * key ({@link HmacSha256}) and compared in constant time.
 *
 * Parsing is strict: parts `t`, `kid` and `v1` each exactly once, in any order, optional spaces
 * around commas, and any other part rejected. Tolerating unknown parts would let a future scheme
 * be silently ignored by an older verifier; a new scheme gets a new header version instead.
 */
import type { Clock } from "../clock.ts";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { HmacSha256 } from "../crypto.ts";
import { AppError } from "../errors.ts";
import { payproxyErrors } from "./errors.ts";
import { ReplayMarks } from "./replay.ts";
import { boundedCache } from "../bounded_cache.ts";

/** Request header carrying the signature. */
export const SIGNATURE_HEADER = "zc-signature";
/** Request header carrying the caller's request id; part of the signed string. */
export const REQUEST_ID_HEADER = "zc-request-id";
/** Optional request header naming the paying agent; part of the signed string. */
export const AGENT_ID_HEADER = "zc-agent-id";
/** Response header reporting usage. */
export const USAGE_HEADER = "zc-usage";

/** The parsed parts of a `zc-signature` header. */
export interface SignatureParts {
  /** Unix seconds, as the digits appeared (the canonical string uses them verbatim). */
  t: string;
  kid: string;
  /** 64 lowercase hex characters. */
  v1: string;
}

/** The fields of the canonical string. */
export interface CanonicalFields {
  t: string | number;
  method: string;
  /** Path plus query string, e.g. `/payproxy/v2/search?data_model_id=dm_...`. */
  pathAndQuery: string;
  /** Lowercase hex SHA-256 of the raw body. */
  bodySha256: string;
  requestId: string;
  /** Absent, undefined and `""` all sign as the empty string. */
  agentId?: string | null;
}

/**
 * Why a signature did not verify. Private: it goes to the log as the cause of the 401, never into
 * a response body.
 */
export class SignatureError extends Error {
  constructor(readonly reason: string, message: string) {
    super(message);
    this.name = "SignatureError";
  }
}

const T_RE = /^\d{1,20}$/;
const KID_RE = /^[A-Za-z0-9._-]{1,64}$/;
const V1_RE = /^[0-9a-f]{64}$/;
// Header values cannot carry CR/LF, but ids also reach logs and the canonical string: keep them
// to visible ASCII and spaces, bounded.
const HEADER_ID_RE = /^[\x20-\x7e]{1,256}$/;
const encoder = new TextEncoder();

/**
 * Parses a `zc-signature` header value.
 * @throws {SignatureError} when the value is missing, malformed, repeats a part or has an unknown one.
 */
export function parseSignatureHeader(value: string | null | undefined): SignatureParts {
  if (value === null || value === undefined || value.trim() === "") {
    throw new SignatureError("missing", "zc-signature header is missing");
  }
  if (value.length > 512) throw new SignatureError("malformed", "zc-signature header is too long");
  const seen: Partial<SignatureParts> = {};
  for (const raw of value.split(",")) {
    const part = raw.trim();
    const eq = part.indexOf("=");
    if (eq <= 0) throw new SignatureError("malformed", "zc-signature part is not name=value");
    const name = part.slice(0, eq);
    const v = part.slice(eq + 1);
    if (name !== "t" && name !== "kid" && name !== "v1") {
      throw new SignatureError("unknown_part", `zc-signature has an unknown part: ${name.slice(0, 16)}`);
    }
    if (seen[name] !== undefined) throw new SignatureError("duplicate_part", `zc-signature repeats part ${name}`);
    seen[name] = v;
  }
  if (seen.t === undefined || seen.kid === undefined || seen.v1 === undefined) {
    throw new SignatureError("malformed", "zc-signature needs t, kid and v1");
  }
  if (!T_RE.test(seen.t)) throw new SignatureError("malformed", "zc-signature t is not 1 to 20 digits");
  if (!KID_RE.test(seen.kid)) throw new SignatureError("malformed", "zc-signature kid is malformed");
  if (!V1_RE.test(seen.v1)) throw new SignatureError("malformed", "zc-signature v1 is not 64 lowercase hex");
  return { t: seen.t, kid: seen.kid, v1: seen.v1 };
}

/** Formats a `zc-signature` header value. */
export function formatSignatureHeader(parts: SignatureParts): string {
  return `t=${parts.t},kid=${parts.kid},v1=${parts.v1}`;
}

/** The canonical string: the six fields joined by `\n`. */
export function canonicalString(f: CanonicalFields): string {
  return [String(f.t), f.method.toUpperCase(), f.pathAndQuery, f.bodySha256, f.requestId, f.agentId ?? ""].join("\n");
}

/**
 * The path plus query string of an absolute URL, taken from its serialized text without decoding
 * or re-encoding anything: `http://h:1/a%20b?x=1&x=2` gives `/a%20b?x=1&x=2`. The fragment is
 * dropped (it is never sent). Both sides use the WHATWG serialization, which is what `fetch`
 * puts on the wire and what `Request.url` holds on the server.
 */
export function pathAndQuery(url: string): string {
  const noFragment = url.split("#", 1)[0]!;
  const schemeEnd = noFragment.indexOf("://");
  if (schemeEnd < 0) return noFragment;
  const authorityEnd = noFragment.slice(schemeEnd + 3).search(/[/?]/);
  if (authorityEnd < 0) return "/";
  const rest = noFragment.slice(schemeEnd + 3 + authorityEnd);
  // "http://h?x=1" has an empty path, which HTTP sends as "/".
  return rest.startsWith("?") ? "/" + rest : rest;
}

/**
 * Lowercase hex SHA-256 of the body. Synchronous (node:crypto): Web Crypto's digest is an async
 * op that hops to a worker thread, which costs more than hashing a request body.
 */
export function bodyDigest(body: Uint8Array): string {
  return createHash("sha256").update(body).digest("hex");
}

// Keying costs more than one MAC; signers reuse a handful of secrets.
const signingKeys = boundedCache<string, HmacSha256>({ max: 64 });
function cachedKey(secret: string): HmacSha256 {
  let key = signingKeys.get(secret);
  if (!key) {
    key = new HmacSha256(secret);
    signingKeys.set(secret, key);
  }
  return key;
}

/** Input for {@link signRequest}. */
export interface SignInput {
  /** The secret, or its keyed HMAC (as {@link VerifiedRequest.key} holds it). */
  secret: string | HmacSha256;
  kid: string;
  /** Unix seconds. */
  t: number | string;
  method: string;
  /** An absolute URL (its path and query are signed) or a path plus query string. */
  url: string;
  body?: Uint8Array | string;
  requestId: string;
  agentId?: string | null;
}

/** A signed request's headers and the values behind them. */
export interface SignedRequest {
  /** The `zc-signature` header value. */
  header: string;
  v1: string;
  canonical: string;
  /** `zc-signature`, `zc-request-id` and, when given, `zc-agent-id`: ready to merge into a request. */
  headers: Record<string, string>;
}

/**
 * Signs a request with the scheme the payproxy routes verify. The storefront's paid proxy uses
 * it for upstream calls; this service uses it for its allowance calls.
 * @example
 * const s = signRequest({ secret, kid, t: unixSeconds(clock), method: "POST", url, body, requestId });
 * await fetch(url, { method: "POST", body, headers: { ...s.headers, "content-type": "application/json" } });
 */
export function signRequest(input: SignInput): SignedRequest {
  const body = typeof input.body === "string" ? encoder.encode(input.body) : input.body ?? new Uint8Array();
  const t = String(input.t);
  const canonical = canonicalString({
    t,
    method: input.method,
    pathAndQuery: input.url.startsWith("/") ? input.url : pathAndQuery(new URL(input.url).href),
    bodySha256: bodyDigest(body),
    requestId: input.requestId,
    agentId: input.agentId,
  });
  const key = typeof input.secret === "string" ? cachedKey(input.secret) : input.secret;
  const v1 = key.digest(canonical).toString("hex");
  const header = formatSignatureHeader({ t, kid: input.kid, v1 });
  const headers: Record<string, string> = { [SIGNATURE_HEADER]: header, [REQUEST_ID_HEADER]: input.requestId };
  if (input.agentId) headers[AGENT_ID_HEADER] = input.agentId;
  return { header, v1, canonical, headers };
}

/** A signing key as the verifier needs it: the secret and whether it may still verify. */
export interface VerificationKey {
  kid: string;
  sellerId: string;
  secret: string;
  /** Only `current` and `previous` keys verify. */
  status: "current" | "previous" | "retired";
}

/** Where the verifier finds keys by `kid`. */
export interface KeyLookup {
  get(kid: string): Promise<VerificationKey | null>;
}

/** What a request presents for verification. */
export interface VerifyInput {
  signature: string | null | undefined;
  method: string;
  /** The request URL exactly as received (`Request.url`). */
  url: string;
  body: Uint8Array;
  requestId: string | null | undefined;
  agentId: string | null | undefined;
  /**
   * What {@link SignatureVerifier.checkHeaders} found for these headers, when the caller checked them
   * before reading the body: the MAC then uses it instead of parsing and looking the key up again.
   */
  checked?: CheckedHeaders;
}

/** Signature headers that passed {@link SignatureVerifier.checkHeaders}: all the MAC still needs but the body. */
export interface CheckedHeaders {
  /** The header values checked (a later check reuses this only for the same values). */
  signature: string;
  requestId: string;
  agentId: string;
  parts: SignatureParts;
  /** The timestamp, as a number. */
  t: number;
  record: VerificationKey;
}

/** A verified request: who signed it and for which agent. */
export interface VerifiedRequest {
  kid: string;
  sellerId: string;
  /** `""` when the request named no agent. */
  agentId: string;
  requestId: string;
  t: number;
  v1: string;
  /** The verifying key, keyed, for signing follow-up calls (allowance); it never exposes the secret. */
  key: HmacSha256;
}

/** The 401 every signature failure becomes; the reason rides in the private cause. */
export function invalidSignature(cause: unknown): AppError {
  return payproxyErrors.invalid_payproxy_signature({ cause });
}

/**
 * Verifies signed requests: format, key (current or previous, never retired), timestamp within
 * `skewS` of the injected clock, HMAC (compared in constant time), then single use: a signature
 * that verified once is refused for the rest of its validity window.
 */
export class SignatureVerifier {
  readonly #keys: KeyLookup;
  readonly #marks: ReplayMarks;
  readonly #clock: Clock;
  readonly #skewS: number;
  // Keyed HMACs by kid, keyed again when the stored secret changes.
  readonly #cache = boundedCache<string, { secret: string; key: HmacSha256 }>({ max: 1000 });

  constructor({ keys, kv, clock, skewS = 300 }: { keys: KeyLookup; kv: Deno.Kv; clock: Clock; skewS?: number }) {
    this.#keys = keys;
    this.#marks = new ReplayMarks(kv, { clock });
    this.#clock = clock;
    this.#skewS = skewS;
  }

  /**
   * Verifies a request and consumes its signature.
   * @throws {AppError} 401 `invalid_payproxy_signature`, whatever the reason (the reason is its cause).
   */
  async verify(input: VerifyInput): Promise<VerifiedRequest> {
    let verified: VerifiedRequest;
    try {
      verified = await this.check(input);
    } catch (err) {
      if (err instanceof SignatureError) throw invalidSignature(err);
      throw err;
    }
    await this.consume(verified);
    return verified;
  }

  /**
   * Checks a request's signature without consuming it (no replay bookkeeping); for benchmarks and
   * for callers with their own single-use rule.
   * @throws {SignatureError} naming the reason.
   */
  async check(input: VerifyInput): Promise<VerifiedRequest> {
    const { parts, requestId, agentId, t, record } = await this.#stillChecked(input) ?? await this.checkHeaders(input);
    const canonical = canonicalString({
      t: parts.t,
      method: input.method,
      pathAndQuery: pathAndQuery(input.url),
      bodySha256: bodyDigest(input.body),
      requestId,
      agentId,
    });
    const key = this.#key(record);
    if (!key.verify(canonical, Buffer.from(parts.v1, "hex"))) {
      throw new SignatureError("mismatch", `signature does not match (kid ${parts.kid})`);
    }
    return { kid: parts.kid, sellerId: record.sellerId, agentId, requestId, t, v1: parts.v1, key };
  }

  /**
   * Everything {@link check} checks before the MAC, which needs the body: the header's form, the
   * ids, the timestamp and the key. A request that fails here is refused before its body is read.
   * @throws {SignatureError} naming the reason.
   */
  async checkHeaders(input: Pick<VerifyInput, "signature" | "requestId" | "agentId">): Promise<CheckedHeaders> {
    const parts = parseSignatureHeader(input.signature);
    const requestId = input.requestId ?? "";
    if (!HEADER_ID_RE.test(requestId)) throw new SignatureError("request_id", "zc-request-id is missing or malformed");
    const agentId = input.agentId ?? "";
    if (agentId !== "" && !HEADER_ID_RE.test(agentId)) {
      throw new SignatureError("agent_id", "zc-agent-id is malformed");
    }
    const t = Number(parts.t);
    this.#checkTime(t);
    const record = await this.#usableKey(parts.kid);
    return { signature: input.signature!, requestId, agentId, parts, t, record };
  }

  /** The key `kid` names, while it may verify. @throws {SignatureError} when unknown or retired. */
  async #usableKey(kid: string): Promise<VerificationKey> {
    const record = await this.#keys.get(kid);
    if (!record) throw new SignatureError("unknown_kid", `no signing secret configured for kid ${kid}`);
    if (record.status !== "current" && record.status !== "previous") {
      throw new SignatureError("retired_kid", `signing secret ${kid} is retired`);
    }
    return record;
  }

  /** The timestamp is within the allowed skew of the clock. @throws {SignatureError} when not. */
  #checkTime(t: number): void {
    const now = this.#clock.now().getTime() / 1000;
    if (!(Math.abs(now - t) <= this.#skewS)) {
      throw new SignatureError("timestamp", `timestamp ${Math.round(now - t)} s away from the server clock`);
    }
  }

  /**
   * The input's earlier header check, when it was made for these very header values: its parse is
   * not redone, but its timestamp and its key are checked again, since the body may have taken a
   * while (a key retired meanwhile no longer verifies; the lookup is the key store's cache).
   */
  async #stillChecked(input: VerifyInput): Promise<CheckedHeaders | null> {
    const c = input.checked;
    if (!c || c.signature !== input.signature) return null;
    if (c.requestId !== (input.requestId ?? "") || c.agentId !== (input.agentId ?? "")) return null;
    this.#checkTime(c.t);
    return { ...c, record: await this.#usableKey(c.parts.kid) };
  }

  /** The keyed HMAC of a stored secret (cached). */
  #key(record: VerificationKey): HmacSha256 {
    const hit = this.#cache.get(record.kid);
    if (hit && hit.secret === record.secret) return hit.key;
    const key = new HmacSha256(record.secret);
    this.#cache.set(record.kid, { secret: record.secret, key });
    return key;
  }

  /**
   * Marks a verified signature as used, atomically: of two concurrent requests carrying it, exactly
   * one wins (see {@link ReplayMarks}). The mark outlives the signature's validity window (t + skew);
   * KV may keep it longer, which is harmless because an older signature fails the timestamp check.
   * @throws {AppError} 401 `invalid_payproxy_signature` when the signature was used before.
   */
  async consume(v: VerifiedRequest): Promise<void> {
    const claim = this.claim(v);
    if (claim instanceof AppError) throw claim;
    await claim;
  }

  /**
   * Starts {@link consume} for callers that work while the mark commits. A replay this process
   * remembers is known at once and returned as its 401; otherwise the promise settles when KV has
   * decided, rejecting with the 401 of a replay.
   */
  claim(v: VerifiedRequest): AppError | Promise<void> {
    const nowS = this.#clock.now().getTime() / 1000;
    const expireIn = Math.max(1, Math.ceil(v.t + this.#skewS - nowS) + 60) * 1000;
    const replay = () => invalidSignature(new SignatureError("replay", `signature already used (kid ${v.kid})`));
    // The timestamp leads the key (v1 covers it, so a replay has the same key): marks then land
    // side by side in KV's ordered storage instead of at random places, which makes a group commit
    // touch a few pages rather than one per mark (~40 % less KV work per mark).
    const marked = this.#marks.mark(["payproxy_replay", v.t, v.kid, v.v1], expireIn);
    if (marked === false) return replay();
    return marked.then((first) => {
      if (!first) throw replay();
    });
  }
}
