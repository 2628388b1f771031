import { type Clock, unixSeconds } from "../clock.ts";
import { newId } from "../ids.ts";
import type { Account, Credential, CredentialType } from "./types.ts";

/**
 * The last whole second (UNIX) a credential may be used in, the unit its tokens end on; undefined when
 * it does not expire. {@link AccountStore.isLive} and the token lifetimes both end there, so no token
 * is minted already expired.
 */
export function credentialEndS(cred: Pick<Credential, "expiresAt">): number | undefined {
  return cred.expiresAt ? Math.floor(Date.parse(cred.expiresAt) / 1000) : undefined;
}

/** Reads and writes humans' accounts and agent credentials. Writes go into caller-built atomic operations. */
export class AccountStore {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  /** The credential, or null. */
  async credential(id: string): Promise<Credential | null> {
    return (await this.kv.get<Credential>(["credential", id])).value;
  }

  /** The account, or null. */
  async account(id: string): Promise<Account | null> {
    return (await this.kv.get<Account>(["account", id])).value;
  }

  /** The account id for a (lowercased) address, with the entry for atomic checks. */
  accountIdByEmail(email: string): Promise<Deno.KvEntryMaybe<string>> {
    return this.kv.get<string>(["account_by_email", email]);
  }

  /** Ids of every credential the account's human claimed (entitlements are shared across them). */
  async credentialIds(accountId: string): Promise<string[]> {
    const out: string[] = [];
    for await (const e of this.kv.list<string>({ prefix: ["account_credential", accountId] })) out.push(e.value);
    return out;
  }

  /**
   * Revokes a credential: its assertions stop exchanging at once.
   * @returns false when no such credential exists.
   */
  async revokeCredential(id: string): Promise<boolean> {
    for (let i = 0; i < 8; i++) {
      const e = await this.kv.get<Credential>(["credential", id]);
      if (!e.value) return false;
      if (e.value.revokedAt) return true;
      const now = this.clock.now();
      // An unclaimed credential keeps the lifetime it was written with: KV drops it a day past its expiry.
      const keep = e.value.expiresAt
        ? { expireIn: Math.max(0, Date.parse(e.value.expiresAt) - now.getTime()) + 86_400_000 }
        : undefined;
      const res = await this.kv.atomic().check(e)
        .set(["credential", id], { ...e.value, revokedAt: now.toISOString() }, keep).commit();
      if (res.ok) return true;
    }
    throw new Error("credential revocation kept conflicting");
  }

  /**
   * Whether a credential can be used right now: exists, not revoked, not past its expiry. Its tokens
   * end on whole seconds (JWT `exp`) and never after it, so it ends at the last whole second of its
   * expiry: in the part second after, every token it could mint would be expired at birth.
   */
  isLive(cred: Credential | null): cred is Credential {
    if (!cred || cred.revokedAt) return false;
    return !cred.expiresAt || credentialEndS(cred)! > unixSeconds(this.clock);
  }

  /**
   * Adds "this e-mail's human" to `op`: the existing account (guarded by `existing`), or a new one
   * guarded against a concurrent creation. Either way the included units are unlocked.
   */
  async accountInto(op: Deno.AtomicOperation, email: string): Promise<Account> {
    const now = this.clock.now().toISOString();
    const idEntry = await this.accountIdByEmail(email);
    op.check(idEntry);
    if (idEntry.value) {
      const acc = await this.kv.get<Account>(["account", idEntry.value]);
      if (acc.value) {
        op.check(acc);
        const account = { ...acc.value, includedUnitsUnlockedAt: acc.value.includedUnitsUnlockedAt ?? now };
        op.set(["account", account.accountId], account);
        return account;
      }
    }
    const account: Account = {
      accountId: newId("hu", this.clock),
      email,
      createdAt: now,
      includedUnitsUnlockedAt: now,
    };
    op.check({ key: ["account", account.accountId], versionstamp: null })
      .set(["account", account.accountId], account)
      .set(["account_by_email", email], account.accountId);
    return account;
  }

  /** A new claimed credential bound to `accountId`, added to `op`. */
  claimedCredentialInto(
    op: Deno.AtomicOperation,
    type: CredentialType,
    accountId: string,
    sellerId: string,
  ): Credential {
    const now = this.clock.now().toISOString();
    const cred: Credential = {
      credentialId: newId("ag", this.clock),
      type,
      state: "claimed",
      accountId,
      sellerId,
      createdAt: now,
      claimedAt: now,
    };
    op.check({ key: ["credential", cred.credentialId], versionstamp: null })
      .set(["credential", cred.credentialId], cred)
      .set(["account_credential", accountId, cred.credentialId], cred.credentialId);
    return cred;
  }
}
