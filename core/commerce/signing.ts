/**
 * The storefront's seam to the payproxy signature scheme (spec 5.2) and the sellers' signing
 * secrets. The payproxy room (issue 5) owns the scheme and the secret store; until its module is on
 * main this file carries an interim implementation of the same six-field scheme so the paid proxy
 * and `/internal/allowance` can be built and tested. Swap {@link KvSigningSecrets} and
 * {@link signPayproxyRequest}/{@link verifyPayproxyRequest} for issue 5's exports when they land.
 */
import type { Clock } from "../clock.ts";
import { base64url, randomBytes, sha256Hex, timingSafeEqual, toHex } from "../crypto.ts";

const encoder = new TextEncoder();
/** Allowed clock skew of a signature timestamp (spec 8). */
export const SIGNATURE_SKEW_S = 300;

/** A seller's current signing key. */
export interface SigningKey {
  kid: string;
  secret: string;
}

/** Where sellers' signing secrets live (issue 5's secret store implements the same questions). */
export interface SigningSecrets {
  /** The key new signatures for this seller use, or null while the seller has none. */
  current(sellerId: string): Promise<SigningKey | null>;
  /** The seller and secret behind a `kid`, or null. */
  byKid(kid: string): Promise<{ sellerId: string; secret: string } | null>;
}

/** Interim KV store: `["commerce_signing", sellerId]` and `["commerce_signing_kid", kid]`. */
export class KvSigningSecrets implements SigningSecrets {
  constructor(private readonly kv: Deno.Kv) {}

  async current(sellerId: string): Promise<SigningKey | null> {
    return (await this.kv.get<SigningKey>(["commerce_signing", sellerId])).value;
  }

  async byKid(kid: string): Promise<{ sellerId: string; secret: string } | null> {
    return (await this.kv.get<{ sellerId: string; secret: string }>(["commerce_signing_kid", kid])).value;
  }

  /** Sets a fresh random secret for the seller and returns it (shown once to the operator). */
  async create(sellerId: string): Promise<SigningKey> {
    const key: SigningKey = { kid: `kid_${toHex(randomBytes(8))}`, secret: base64url(randomBytes(32)) };
    await this.kv.atomic()
      .set(["commerce_signing", sellerId], key)
      .set(["commerce_signing_kid", key.kid], { sellerId, secret: key.secret })
      .commit();
    return key;
  }
}

/** What a signature covers. */
export interface SignedParts {
  method: string;
  /** Path plus query string exactly as sent. */
  pathAndQuery: string;
  body: Uint8Array;
  requestId: string;
  agentId?: string;
}

async function hmacHex(secret: string, data: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return toHex(await crypto.subtle.sign("HMAC", key, encoder.encode(data)));
}

async function canonical(t: number, p: SignedParts): Promise<string> {
  return [String(t), p.method.toUpperCase(), p.pathAndQuery, await sha256Hex(p.body), p.requestId, p.agentId ?? ""]
    .join("\n");
}

/** The `zc-signature` header value `t=<unix>,kid=<kid>,v1=<hex>` for a request. */
export async function signPayproxyRequest(key: SigningKey, parts: SignedParts, clock: Clock): Promise<string> {
  const t = Math.floor(clock.now().getTime() / 1000);
  return `t=${t},kid=${key.kid},v1=${await hmacHex(key.secret, await canonical(t, parts))}`;
}

/**
 * Verifies a `zc-signature` header; returns the seller whose secret signed it, or null. Never
 * throws on bad input and never says why (callers answer one opaque 401).
 */
export async function verifyPayproxyRequest(
  header: string | undefined,
  parts: SignedParts,
  secrets: SigningSecrets,
  clock: Clock,
): Promise<string | null> {
  if (!header || !parts.requestId) return null;
  const m = /^t=(\d{1,20}),kid=([A-Za-z0-9_.-]{1,128}),v1=([0-9a-f]{64})$/.exec(header);
  if (!m) return null;
  const t = Number(m[1]);
  if (Math.abs(Math.floor(clock.now().getTime() / 1000) - t) > SIGNATURE_SKEW_S) return null;
  const key = await secrets.byKid(m[2]!);
  if (!key) return null;
  const expected = await hmacHex(key.secret, await canonical(t, parts));
  return timingSafeEqual(expected, m[3]!) ? key.sellerId : null;
}
