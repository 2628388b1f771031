/**
 * HTTP Message Signatures Directories (draft-meunier-http-message-signatures-directory): the
 * public keys a bot publishes at `https://<origin>/.well-known/http-message-signatures-directory`.
 * Fetched through the SSRF guard (public addresses only, size and time bounded), cached per origin
 * (failures too, briefly), and with a bound on fetches in flight, so signed requests naming ever
 * new origins cannot make this service fetch without limit.
 */
import { calculateJwkThumbprint, type JWK } from "jose";
import { boundedCache } from "../bounded_cache.ts";
import type { Logger } from "../log.ts";
import type { SafeFetcher } from "../net/mod.ts";

/** Where a directory lives under its origin. */
export const DIRECTORY_PATH = "/.well-known/http-message-signatures-directory";
/** Its media type (application/json is accepted too). */
export const DIRECTORY_TYPE = "application/http-message-signatures-directory+json";
const MAX_BYTES = 64 * 1024;
const MAX_KEYS = 32;
const FRESH_MS = 5 * 60_000;
const FAILED_MS = 60_000;

type Entry = { keys: JWK[] } | { failed: true };

/** Options of {@link KeyDirectories}. */
export interface KeyDirectoryOptions {
  fetcher: SafeFetcher;
  log: Logger;
  /** Fetches in flight at once; past it a new origin is not fetched (its signature stays unverified). */
  maxInFlight?: number;
  timeoutMs?: number;
}

/** Resolves a bot's public key from its directory. */
export class KeyDirectories {
  readonly #cache = boundedCache<string, Entry>({ max: 1000 });
  readonly #pending = new Map<string, Promise<Entry>>();
  readonly #maxInFlight: number;

  constructor(private readonly o: KeyDirectoryOptions) {
    this.#maxInFlight = o.maxInFlight ?? 4;
  }

  /**
   * The verification key `keyId` (an RFC 7638 SHA-256 thumbprint) of the directory at `origin`,
   * extractable (the verifier checks its thumbprint), or undefined.
   */
  async resolve(origin: string, keyId: string, algorithm: string): Promise<CryptoKey | undefined> {
    const entry = await this.#directory(origin);
    if ("failed" in entry) return undefined;
    for (const jwk of entry.keys) {
      let thumbprint: string;
      try {
        thumbprint = await calculateJwkThumbprint(jwk, "sha256");
      } catch {
        continue;
      }
      if (thumbprint !== keyId) continue;
      const params = importParams(jwk, algorithm);
      if (!params) return undefined;
      try {
        return await crypto.subtle.importKey("jwk", jwk as JsonWebKey, params, true, ["verify"]);
      } catch {
        return undefined;
      }
    }
    return undefined;
  }

  async #directory(origin: string): Promise<Entry> {
    const cached = this.#cache.get(origin);
    if (cached) return cached;
    const pending = this.#pending.get(origin);
    if (pending) return await pending;
    if (this.#pending.size >= this.#maxInFlight) return { failed: true };
    const work = this.#fetch(origin).finally(() => this.#pending.delete(origin));
    this.#pending.set(origin, work);
    return await work;
  }

  async #fetch(origin: string): Promise<Entry> {
    let entry: Entry;
    try {
      const res = await this.o.fetcher.fetch(`${origin}${DIRECTORY_PATH}`, {
        accept: [DIRECTORY_TYPE, "application/json"],
        maxBytes: MAX_BYTES,
        maxRedirects: 0,
        timeoutMs: this.o.timeoutMs ?? 3000,
      });
      const body = res.status === 200 ? JSON.parse(new TextDecoder().decode(res.body)) : null;
      const keys = Array.isArray(body?.keys) ? body.keys.filter(isJwk).slice(0, MAX_KEYS) : [];
      entry = keys.length ? { keys } : { failed: true };
    } catch (err) {
      this.o.log.warn("web bot auth directory not read", { origin, error: String((err as Error).message ?? err) });
      entry = { failed: true };
    }
    this.#cache.set(origin, entry, { ttl: "failed" in entry ? FAILED_MS : FRESH_MS });
    return entry;
  }
}

const isJwk = (k: unknown): k is JWK => typeof k === "object" && k !== null && typeof (k as JWK).kty === "string";

/** Web Crypto import parameters of a directory key for the signature's algorithm. */
function importParams(jwk: JWK, algorithm: string): AlgorithmIdentifier | RsaHashedImportParams | null {
  if (algorithm === "ed25519" && jwk.kty === "OKP" && jwk.crv === "Ed25519") return { name: "Ed25519" };
  if (algorithm === "rsa-pss-sha512" && jwk.kty === "RSA") return { name: "RSA-PSS", hash: "SHA-512" };
  return null;
}
