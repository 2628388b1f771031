import type { Clock } from "../clock.ts";
import { base64url, fromBase64url, randomBytes, sha256Hex } from "../crypto.ts";
import { identityErrors } from "./errors.ts";
import { newId } from "../ids.ts";
import type { OAuthBinding, RefreshFamily, RefreshTokenRecord } from "./types.ts";

const TOKEN_RE = /^rt_[A-Za-z0-9_-]{43}$/;
/** Rotations a token in its reuse grace may be followed through to the live head of its family. */
const MAX_GRACE_CHAIN = 4;

/**
 * Rotating refresh tokens (stored by SHA-256). Each use hands out a successor and marks the used
 * token `rotated`; presenting a rotated token again means it leaked, so its whole family is revoked
 * (unless the caller grants a reuse grace: see {@link RefreshTokens.rotate}).
 *
 * A family (and its entry under its credential) is kept `familyKeepS` plus a day past its newest
 * write: the OAuth consent makes families for free anonymous identities, which would otherwise
 * stay in KV for good. A family gone reads as revoked everywhere, so it may go once nothing issued
 * with it can be presented: its newest token (`ttlS`) and the assertions minted with it.
 */
export class RefreshTokens {
  readonly #familyKeep: { expireIn: number };

  /**
   * @param ttlS lifetime of a refresh token
   * @param familyKeepS how long a family outlives its newest write: at least `ttlS` and the longest
   *   assertion lifetime (assertions carry their family, checked at exchange)
   */
  constructor(
    private readonly kv: Deno.Kv,
    private readonly clock: Clock,
    private readonly ttlS: number,
    familyKeepS = ttlS,
  ) {
    this.#familyKeep = { expireIn: (Math.max(ttlS, familyKeepS) + 86400) * 1000 };
  }

  /**
   * Adds a fresh token (in a new family unless `familyId` is given) to an atomic operation, so it
   * lands together with whatever made the credential claimed.
   * @param oauth binds a new family to the OAuth client and resource it was granted to.
   */
  async issueInto(
    op: Deno.AtomicOperation,
    credentialId: string,
    familyId?: string,
    oauth?: OAuthBinding,
  ): Promise<{ token: string; expiresIn: number; familyId: string }> {
    const token = "rt_" + base64url(randomBytes(32));
    const hash = await sha256Hex(token);
    const now = this.clock.now();
    const fam = familyId ?? newId("rf", this.clock);
    if (!familyId) {
      const family: RefreshFamily = {
        familyId: fam,
        credentialId,
        createdAt: now.toISOString(),
        ...(oauth ? { oauth } : {}),
      };
      op.check({ key: ["refresh_family", fam], versionstamp: null }).set(
        ["refresh_family", fam],
        family,
        this.#familyKeep,
      )
        .set(["credential_refresh_family", credentialId, fam], fam, this.#familyKeep);
    } else {
      // A successor in the family: the family lives on as long as it.
      op.set(["credential_refresh_family", credentialId, fam], fam, this.#familyKeep);
    }
    const rec: RefreshTokenRecord = {
      familyId: fam,
      credentialId,
      status: "active",
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + this.ttlS * 1000).toISOString(),
    };
    op.check({ key: ["refresh_token", hash], versionstamp: null })
      .set(["refresh_token", hash], rec, { expireIn: (this.ttlS + 86400) * 1000 });
    return { token, expiresIn: this.ttlS, familyId: fam };
  }

  /**
   * Spends a refresh token and returns its successor, atomically (of two concurrent uses one wins;
   * the other counts as reuse, or, within `reuseGraceS`, gets the live head of its rotations).
   * @param extra lets the caller check more state in the same commit (e.g. the credential) and
   * refuse a family that is not its kind (it gets the family record).
   * @throws AppError 401 `invalid_refresh_token`: unknown, expired, revoked family, or reuse (which revokes the family).
   */
  async rotate(
    token: string,
    extra: (credentialId: string, op: Deno.AtomicOperation, family: RefreshFamily) => Promise<void> = async () => {},
    { reuseGraceS = 0 }: {
      /**
       * A rotated token presented again this soon gets the live head of its rotations (its successor,
       * or that one's, each rotated this recently) instead of revoking the family: a client's parallel
       * refreshes, some of which read the newer token before the others arrived.
       */
      reuseGraceS?: number;
    } = {},
  ): Promise<{ credentialId: string; token: string; expiresIn: number; familyId: string }> {
    if (!TOKEN_RE.test(token)) throw identityErrors.invalid_refresh_token();
    const hash = await sha256Hex(token);
    for (let i = 0; i < 8; i++) {
      const entry = await this.kv.get<RefreshTokenRecord>(["refresh_token", hash]);
      const rec = entry.value;
      if (!rec) throw identityErrors.invalid_refresh_token();
      const famEntry = await this.kv.get<RefreshFamily>(["refresh_family", rec.familyId]);
      if (!famEntry.value || famEntry.value.revokedAt) throw identityErrors.refresh_token_revoked();
      const now = this.clock.now().getTime();
      if (rec.status === "rotated") {
        const successor = await this.#successorInGrace(token, rec, now, reuseGraceS);
        if (!successor) {
          await this.#revokeFamily(rec.familyId);
          throw identityErrors.refresh_token_reused();
        }
        // The same answer as the rotation's, checked as it was: the family, the caller's own checks.
        const op = this.kv.atomic().check(entry).check(famEntry).check(successor.entry);
        await extra(rec.credentialId, op, famEntry.value);
        if (!(await op.commit()).ok) continue;
        const expiresIn = Math.floor((Date.parse(successor.entry.value.expiresAt) - now) / 1000);
        return { credentialId: rec.credentialId, token: successor.token, expiresIn, familyId: rec.familyId };
      }
      if (Date.parse(rec.expiresAt) <= now) throw identityErrors.refresh_token_expired();
      const op = this.kv.atomic().check(entry).check(famEntry)
        .set(["refresh_family", rec.familyId], famEntry.value, this.#familyKeep);
      await extra(rec.credentialId, op, famEntry.value);
      const next = await this.issueInto(op, rec.credentialId, rec.familyId);
      const rotated: RefreshTokenRecord = {
        ...rec,
        status: "rotated",
        rotatedAt: new Date(now).toISOString(),
        ...(reuseGraceS > 0 ? { successorSealed: await seal(token, next.token) } : {}),
      };
      op.set(["refresh_token", hash], rotated, { expireIn: (this.ttlS + 86400) * 1000 });
      if ((await op.commit()).ok) {
        return { credentialId: rec.credentialId, token: next.token, expiresIn: next.expiresIn, familyId: rec.familyId };
      }
    }
    throw new Error("refresh rotation kept conflicting");
  }

  /**
   * The live head of a token's rotations within the grace, or null (a replay): its successor while
   * unused; when a parallel refresh of the same client already spent that successor (it read the
   * newer token before this one arrived), the successor's own successor, and so on, as long as each
   * rotation is less than `graceS` old. Each step is sealed under the token before it, so only a
   * holder of this token can follow the chain.
   */
  async #successorInGrace(token: string, rec: RefreshTokenRecord, now: number, graceS: number) {
    if (graceS <= 0) return null;
    let holder = token;
    let held = rec;
    for (let step = 0; step < MAX_GRACE_CHAIN; step++) {
      if (!held.rotatedAt || !held.successorSealed) return null;
      if (now - Date.parse(held.rotatedAt) >= graceS * 1000) return null;
      const successor = await unseal(holder, held.successorSealed);
      if (!successor) return null;
      const entry = await this.kv.get<RefreshTokenRecord>(["refresh_token", await sha256Hex(successor)]);
      const next = entry.value;
      if (!next || Date.parse(next.expiresAt) <= now) return null;
      if (next.status === "active") return { token: successor, entry: entry as Deno.KvEntry<RefreshTokenRecord> };
      holder = successor;
      held = next;
    }
    return null;
  }

  /** Whether the family exists and is not revoked (assertions issued with it check this at exchange). */
  async familyLive(familyId: string): Promise<boolean> {
    const fam = (await this.kv.get<RefreshFamily>(["refresh_family", familyId])).value;
    return fam !== null && !fam.revokedAt;
  }

  /**
   * Revokes every refresh family of a credential (the credential itself is revoked by the caller).
   * @returns how many families were live.
   */
  async revokeFamiliesOf(credentialId: string): Promise<number> {
    let n = 0;
    for await (const e of this.kv.list<string>({ prefix: ["credential_refresh_family", credentialId] })) {
      if (await this.familyLive(e.value)) {
        await this.#revokeFamily(e.value);
        n++;
      }
    }
    return n;
  }

  /** Revokes one family (a replayed authorization code revokes what it produced). */
  revokeFamily(familyId: string): Promise<void> {
    return this.#revokeFamily(familyId);
  }

  async #revokeFamily(familyId: string): Promise<void> {
    for (let i = 0; i < 8; i++) {
      const e = await this.kv.get<RefreshFamily>(["refresh_family", familyId]);
      if (!e.value || e.value.revokedAt) return;
      const res = await this.kv.atomic().check(e)
        .set(["refresh_family", familyId], { ...e.value, revokedAt: this.clock.now().toISOString() }, this.#familyKeep)
        .commit();
      if (res.ok) return;
    }
  }
}

/**
 * The successor sealed with a one-time pad drawn from the token it replaces (SHA-512 of the token,
 * domain-separated from the SHA-256 that keys its record): only a holder of that token unseals it,
 * never a reader of the store.
 */
async function seal(token: string, successor: string): Promise<string> {
  return base64url(xor(new TextEncoder().encode(successor), await pad(token)));
}

async function unseal(token: string, sealed: string): Promise<string | null> {
  const successor = new TextDecoder().decode(xor(fromBase64url(sealed), await pad(token)));
  return TOKEN_RE.test(successor) ? successor : null;
}

async function pad(token: string): Promise<Uint8Array> {
  const input = new TextEncoder().encode(`refresh-successor-pad:${token}`);
  return new Uint8Array(await crypto.subtle.digest("SHA-512", input));
}

function xor(data: Uint8Array, key: Uint8Array): Uint8Array {
  return data.map((b, i) => b ^ key[i]!);
}
