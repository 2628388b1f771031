import { exportJWK, generateKeyPair, importJWK, type JWK } from "jose";
import type { Clock } from "../clock.ts";
import { base64url, randomBytes } from "../crypto.ts";

/** The algorithm of our assertions and access tokens: Ed25519 signs and verifies an order of magnitude faster than ES256. */
export const SIGNING_ALG = "EdDSA";

/** An Ed25519 key as a JWK. Its "OKP" type is what makes jose's importJWK answer a CryptoKey, never raw bytes. */
type OkpJwk = JWK & { kty: "OKP" };

interface StoredKey {
  kid: string;
  alg: typeof SIGNING_ALG;
  privateJwk: OkpJwk;
  publicJwk: OkpJwk;
  createdAt: string;
  /** Set when a newer key took over signing; the public half stays published until `dropAfter`. */
  retiredAt?: string;
  dropAfter?: string;
}

const CURRENT = ["storefront_signing", "current"];
const keyOf = (kid: string) => ["storefront_signing", "key", kid];

/** A loaded key: the kid and the imported CryptoKeys. */
export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
}

/**
 * The storefront's signing keys, kept in KV so every process signs and verifies with the same
 * ones. `rotate()` makes a new current key; old public keys stay in the JWKS (and verify) until
 * every token they signed has expired. Keys are cached in memory and reloaded every
 * `RELOAD_MS`, or at once (rate-limited) when a token names a kid we have not loaded.
 */
export class SigningKeyStore {
  static readonly RELOAD_MS = 30_000;
  static readonly UNKNOWN_KID_RELOAD_MS = 1_000;
  /**
   * How much longer than `retainS` a retired key stays published: other processes sign with the key
   * they loaded for up to `RELOAD_MS` after a rotation, by clocks that may run ahead of this one.
   */
  static readonly RETIRED_GRACE_MS = SigningKeyStore.RELOAD_MS + 60_000;
  #loadedAt = -Infinity;
  #unknownReloadAt = -Infinity;
  #loading: Promise<void> | null = null;
  #current: SigningKey | null = null;
  #public = new Map<string, CryptoKey>();
  #jwks: JWK[] = [];

  /** @param retainS how long a retired key keeps verifying (the longest token lifetime). */
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock, private readonly retainS: number) {}

  /** The key to sign with, creating the first one on an empty store. */
  async current(): Promise<SigningKey> {
    await this.#fresh();
    if (!this.#current) {
      await this.#createFirst();
      await this.#load();
    }
    return this.#current!;
  }

  /** The public key for `kid`, or null when no such key is published. */
  async publicKey(kid: string): Promise<CryptoKey | null> {
    await this.#fresh();
    const hit = this.#public.get(kid);
    if (hit) return hit;
    const now = performance.now();
    if (now - this.#unknownReloadAt < SigningKeyStore.UNKNOWN_KID_RELOAD_MS) return null;
    this.#unknownReloadAt = now;
    await this.#load();
    return this.#public.get(kid) ?? null;
  }

  /** The public JWK Set (`/.well-known/jwks.json`). */
  async jwks(): Promise<{ keys: JWK[] }> {
    await this.current();
    return { keys: this.#jwks };
  }

  /**
   * Makes a new current key; the previous one keeps verifying for `retainS` (plus
   * {@link SigningKeyStore.RETIRED_GRACE_MS}). Returns the new kid.
   */
  async rotate(): Promise<string> {
    const fresh = await this.#generate();
    for (let i = 0; i < 10; i++) {
      const cur = await this.kv.get<string>(CURRENT);
      let op = this.kv.atomic().check(cur).check({ key: keyOf(fresh.kid), versionstamp: null })
        .set(keyOf(fresh.kid), fresh).set(CURRENT, fresh.kid);
      if (cur.value) {
        const old = await this.kv.get<StoredKey>(keyOf(cur.value));
        if (old.value) {
          const now = this.clock.now();
          op = op.check(old).set(keyOf(cur.value), {
            ...old.value,
            retiredAt: now.toISOString(),
            dropAfter: new Date(now.getTime() + this.retainS * 1000 + SigningKeyStore.RETIRED_GRACE_MS).toISOString(),
          });
        }
      }
      if ((await op.commit()).ok) {
        await this.#load();
        return fresh.kid;
      }
    }
    throw new Error("signing key rotation kept conflicting; retry");
  }

  async #generate(): Promise<StoredKey> {
    const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
    const kid = base64url(randomBytes(12));
    const publicJwk = { ...okp(await exportJWK(publicKey)), kid, alg: SIGNING_ALG, use: "sig" };
    const privateJwk = { ...okp(await exportJWK(privateKey)), kid, alg: SIGNING_ALG };
    return { kid, alg: SIGNING_ALG, privateJwk, publicJwk, createdAt: this.clock.now().toISOString() };
  }

  async #createFirst(): Promise<void> {
    const fresh = await this.#generate();
    // Two processes starting together: one wins, the other loads the winner's key.
    await this.kv.atomic().check({ key: CURRENT, versionstamp: null })
      .set(keyOf(fresh.kid), fresh).set(CURRENT, fresh.kid).commit();
  }

  async #fresh(): Promise<void> {
    if (performance.now() - this.#loadedAt < SigningKeyStore.RELOAD_MS) return;
    await this.#load();
  }

  #load(): Promise<void> {
    this.#loading ??= (async () => {
      try {
        const currentKid = (await this.kv.get<string>(CURRENT)).value;
        const now = this.clock.now().getTime();
        const publicKeys = new Map<string, CryptoKey>();
        const jwks: JWK[] = [];
        let current: SigningKey | null = null;
        for await (const e of this.kv.list<StoredKey>({ prefix: ["storefront_signing", "key"] })) {
          const k = e.value;
          if (k.dropAfter && Date.parse(k.dropAfter) < now && k.kid !== currentKid) continue;
          publicKeys.set(k.kid, await importJWK(k.publicJwk, SIGNING_ALG));
          jwks.push(k.publicJwk);
          if (k.kid === currentKid) {
            current = { kid: k.kid, privateKey: await importJWK(k.privateJwk, SIGNING_ALG) };
          }
        }
        this.#public = publicKeys;
        this.#jwks = jwks;
        this.#current = current;
        this.#loadedAt = performance.now();
      } finally {
        this.#loading = null;
      }
    })();
    return this.#loading;
  }
}

/** The exported JWK of an Ed25519 key, typed as the OKP key it is. */
function okp(jwk: JWK): OkpJwk {
  if (jwk.kty !== "OKP") throw new Error("signing key: jose exported a key that is not OKP");
  return { ...jwk, kty: "OKP" };
}
