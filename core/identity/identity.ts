import type { Clock } from "../clock.ts";
import { identityErrors } from "./errors.ts";
import { oauthErrors } from "./oauth_errors.ts";
import { newId } from "../ids.ts";
import type { AccountStore } from "./accounts.ts";
import type { ClaimService } from "./claims.ts";
import { isEmail, normalizeEmail } from "./emails.ts";
import type { IdJagVerifier } from "./id_jag.ts";
import type { IssuedClaim, IssuedIdentity } from "./identity_body.ts";
import { claimBlock } from "./identity_body.ts";
import type { RefreshTokens } from "./refresh_tokens.ts";
import type { TokenService } from "./tokens.ts";
import type { Credential, Seller } from "./types.ts";

/** Registration switches and lifetimes. */
export interface IdentitySettings {
  anonymousRegistration: boolean;
  serviceAuthRegistration: boolean;
  anonymousTtlS: number;
}

/**
 * POST /agent/identity, the four registration types of spec 3:
 * anonymous -> unclaimed; service_auth -> pending claim; identity_assertion -> claimed;
 * refresh -> claimed (rotated).
 */
export class IdentityService {
  constructor(
    private readonly kv: Deno.Kv,
    private readonly clock: Clock,
    private readonly accounts: AccountStore,
    private readonly claims: ClaimService,
    private readonly refreshTokens: RefreshTokens,
    private readonly tokens: TokenService,
    private readonly idJag: IdJagVerifier,
    private readonly settings: IdentitySettings,
  ) {}

  /**
   * An unclaimed credential at once, with a claim token so a human can claim it later.
   * @throws `anonymous_registration_disabled` 403.
   */
  async anonymous(seller: Seller): Promise<{ identity: IssuedIdentity; claim: IssuedClaim }> {
    if (!this.settings.anonymousRegistration) {
      throw identityErrors.anonymous_registration_disabled();
    }
    const now = this.clock.now();
    const cred: Credential = {
      credentialId: newId("ag", this.clock),
      type: "anonymous",
      state: "unclaimed",
      sellerId: seller.sellerId,
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + this.settings.anonymousTtlS * 1000).toISOString(),
    };
    const op = this.kv.atomic().check({ key: ["credential", cred.credentialId], versionstamp: null })
      // Unclaimed credentials are dropped by KV a day after they expire; expiry is enforced on read.
      .set(["credential", cred.credentialId], cred, { expireIn: (this.settings.anonymousTtlS + 86_400) * 1000 });
    const claim = await this.claims.openInto(op, {
      origin: "anonymous",
      credentialId: cred.credentialId,
      sellerId: seller.sellerId,
      expiresAt: cred.expiresAt,
    });
    if (!(await op.commit()).ok) throw new Error("credential id collision");
    const { assertion, expiresIn } = await this.tokens.mintAssertion(cred);
    return {
      identity: { credential: cred, account: null, assertion, assertionExpiresIn: expiresIn, refresh: null },
      claim,
    };
  }

  /**
   * A claim token for the address; no credential exists until the claim completes.
   * @throws `service_auth_registration_disabled` 403, `invalid_login_hint` 400.
   */
  async serviceAuth(seller: Seller, loginHint: unknown): Promise<IssuedClaim> {
    if (!this.settings.serviceAuthRegistration) {
      throw identityErrors.service_auth_registration_disabled();
    }
    if (!isEmail(loginHint)) throw identityErrors.invalid_login_hint();
    return await this.claims.open({
      origin: "service_auth",
      email: normalizeEmail(loginHint),
      sellerId: seller.sellerId,
    });
  }

  /**
   * Verifies the ID-JAG; a new e-mail is born claimed, a known one must go through a claim.
   * @throws the ID-JAG errors, or `interaction_required` 401 with a claim block.
   */
  async identityAssertion(seller: Seller, assertion: string): Promise<IssuedIdentity> {
    const jag = await this.idJag.verify(assertion);
    for (let i = 0; i < 4; i++) {
      const existing = await this.accounts.accountIdByEmail(jag.email);
      if (existing.value) {
        const claim = await this.claims.open({ origin: "interaction", email: jag.email, sellerId: seller.sellerId });
        throw identityErrors.interaction_required({
          extra: { claim: claimBlock(claim) },
        });
      }
      const op = this.kv.atomic();
      const account = await this.accounts.accountInto(op, jag.email);
      const cred = this.accounts.claimedCredentialInto(op, "identity_assertion", account.accountId, seller.sellerId);
      const refresh = await this.refreshTokens.issueInto(op, cred.credentialId);
      // A concurrent registration created the account first: loop to answer interaction_required.
      if (!(await op.commit()).ok) continue;
      const { assertion: ours, expiresIn } = await this.tokens.mintAssertion(cred, refresh.familyId);
      return {
        credential: cred,
        account,
        assertion: ours,
        assertionExpiresIn: expiresIn,
        refresh: { token: refresh.token, expiresIn: refresh.expiresIn },
      };
    }
    throw new Error("identity registration kept conflicting");
  }

  /**
   * A new assertion and a rotated refresh token.
   * @throws `invalid_refresh_token` 401 (reuse of a rotated token also revokes its family).
   */
  async refresh(refreshToken: string): Promise<IssuedIdentity> {
    let cred: Credential | null = null;
    const rotated = await this.refreshTokens.rotate(refreshToken, async (credentialId, op, family) => {
      // An OAuth client's refresh token goes back to /oauth2/token, never here.
      if (family.oauth) throw identityErrors.invalid_refresh_token();
      const entry = await this.kv.get<Credential>(["credential", credentialId]);
      cred = entry.value;
      if (!this.accounts.isLive(cred) || cred.state !== "claimed") {
        throw identityErrors.refresh_credential_gone();
      }
      op.check(entry);
    });
    const c = cred as unknown as Credential;
    const account = c.accountId ? await this.accounts.account(c.accountId) : null;
    const { assertion, expiresIn } = await this.tokens.mintAssertion(c, rotated.familyId);
    return {
      credential: c,
      account,
      assertion,
      assertionExpiresIn: expiresIn,
      refresh: { token: rotated.token, expiresIn: rotated.expiresIn },
    };
  }

  /** Revokes the refresh families of a credential being revoked. */
  revokeRefreshFamiliesOf(credentialId: string): Promise<number> {
    return this.refreshTokens.revokeFamiliesOf(credentialId);
  }

  /**
   * POST /oauth2/token: assertion -> access token carrying the credential's current state.
   * Revocation bites here, on every exchange: a revoked credential, or a revoked refresh family
   * (reuse detected) for assertions issued with it. Access tokens already issued live out their
   * `ACCESS_TOKEN_TTL_S` (default 300 s), which is the bound on revocation.
   * @throws `invalid_grant` 400 when the assertion does not verify, its credential is gone, revoked
   * or expired, or its refresh family is revoked.
   */
  async exchange(assertion: string): Promise<{ accessToken: string; expiresIn: number }> {
    const { credentialId, refreshFamilyId } = await this.tokens.verifyAssertion(assertion);
    const cred = await this.accounts.credential(credentialId);
    if (!this.accounts.isLive(cred)) {
      throw oauthErrors.assertion_credential_gone();
    }
    if (refreshFamilyId && !(await this.refreshTokens.familyLive(refreshFamilyId))) {
      throw oauthErrors.assertion_family_revoked();
    }
    return await this.tokens.mintAccessToken(cred);
  }
}
