import { errors as joseErrors, type JWTPayload, jwtVerify, SignJWT } from "jose";
import type { Clock } from "../clock.ts";
import { unixSeconds } from "../clock.ts";
import { base64url, randomBytes } from "../crypto.ts";
import { identityErrors } from "./errors.ts";
import { oauthErrors } from "./oauth_errors.ts";
import { SIGNING_ALG, type SigningKeyStore } from "./keys.ts";
import type { Credential } from "./types.ts";
import { credentialEndS } from "./accounts.ts";

/** `typ` of the identity assertion an agent keeps and exchanges at `/oauth2/token`. */
export const ASSERTION_TYP = "agent-assertion+jwt";
/** `typ` of access tokens (RFC 9068). */
export const ACCESS_TOKEN_TYP = "at+jwt";

/** What a verified access token says about its bearer. Stateless: nothing is looked up. */
export interface AgentPrincipal {
  credentialId: string;
  claimed: boolean;
  accountId: string | null;
  tokenId: string;
  expiresAt: number;
}

/** Issuer settings of our tokens. */
export interface TokenSettings {
  /** The authorization-server issuer (NETWORK_API_URL): `iss` of both tokens and `aud` of assertions. */
  issuer: string;
  /** The storefront resource (AGENT_AUTH_URL): `aud` of access tokens. */
  resource: string;
  accessTokenTtlS: number;
  assertionTtlS: number;
}

/**
 * Mints and verifies our two JWTs, both signed with the storefront key in KV:
 * - the identity assertion (`typ` agent-assertion+jwt, `aud` = the issuer), long-lived, kept by the agent;
 * - the access token (`typ` at+jwt, `aud` = the storefront), minutes, never stored.
 */
export class TokenService {
  constructor(
    private readonly keys: SigningKeyStore,
    private readonly clock: Clock,
    readonly settings: TokenSettings,
  ) {}

  /** An identity assertion for a credential; unclaimed anonymous ones never outlive the credential. */
  async mintAssertion(
    cred: Credential,
    refreshFamilyId?: string,
  ): Promise<{ assertion: string; expiresIn: number }> {
    const now = unixSeconds(this.clock);
    let exp = now + this.settings.assertionTtlS;
    exp = Math.min(exp, credentialEndS(cred) ?? exp);
    const assertion = await this.#sign(
      ASSERTION_TYP,
      {
        sub: cred.credentialId,
        aud: this.settings.issuer,
        cred_type: cred.type,
        // The refresh family it came with: revoking the family stops the assertion at /oauth2/token.
        ...(refreshFamilyId ? { rfam: refreshFamilyId } : {}),
      },
      now,
      exp,
    );
    return { assertion, expiresIn: exp - now };
  }

  /**
   * Verifies an identity assertion presented at the token endpoint.
   * @returns the credential id it names, and the refresh family it was issued with (if any).
   * @throws AppError 400 `invalid_grant` (oauth family) for any failure.
   */
  async verifyAssertion(assertion: string): Promise<{ credentialId: string; refreshFamilyId?: string }> {
    let payload: JWTPayload;
    let typ: string | undefined;
    try {
      const r = await this.#verify(assertion);
      payload = r.payload;
      typ = r.protectedHeader.typ;
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw oauthErrors.assertion_expired({ cause: err });
      throw oauthErrors.assertion_unverified({ cause: err });
    }
    if (typ !== ASSERTION_TYP || payload.iss !== this.settings.issuer || payload.aud !== this.settings.issuer) {
      throw oauthErrors.assertion_not_ours();
    }
    if (typeof payload.sub !== "string") throw oauthErrors.assertion_no_subject();
    if (payload.rfam !== undefined && typeof payload.rfam !== "string") {
      throw oauthErrors.assertion_unverified();
    }
    return {
      credentialId: payload.sub,
      ...(typeof payload.rfam === "string" ? { refreshFamilyId: payload.rfam } : {}),
    };
  }

  /**
   * A short-lived access token carrying the credential's state at this moment, ending no later
   * than the credential.
   * @param opts.audience the resource it is bound to (RFC 8707; default: the storefront).
   * @param opts.clientId the OAuth client it was issued to (default: the credential itself).
   */
  async mintAccessToken(
    cred: Credential,
    opts: { audience?: string; clientId?: string } = {},
  ): Promise<{ accessToken: string; expiresIn: number }> {
    const now = unixSeconds(this.clock);
    // Like its assertion, an unclaimed credential's token never outlives it: a purchase made with
    // it after the credential died would pay for a plan born dead.
    let exp = now + this.settings.accessTokenTtlS;
    exp = Math.min(exp, credentialEndS(cred) ?? exp);
    const accessToken = await this.#sign(
      ACCESS_TOKEN_TYP,
      {
        sub: cred.credentialId,
        aud: opts.audience ?? this.settings.resource,
        client_id: opts.clientId ?? cred.credentialId,
        claimed: cred.state === "claimed",
        ...(cred.accountId ? { acct: cred.accountId } : {}),
      },
      now,
      exp,
    );
    return { accessToken, expiresIn: exp - now };
  }

  /**
   * Verifies an access token. Order matters: a bad signature is `token_invalid` (re-exchange),
   * a good signature on something that is not our access token is `unrecognized_agent_credential`,
   * a past `exp` is `token_expired`.
   * @param audiences the resources this verifier serves (default: the storefront); a token bound
   * to another resource is `unrecognized_agent_credential` here.
   * @throws AppError 401 `invalid_token` with the reason.
   */
  async verifyAccessToken(token: string, audiences: string[] = [this.settings.resource]): Promise<AgentPrincipal> {
    let payload: JWTPayload;
    let typ: string | undefined;
    try {
      const r = await this.#verify(token);
      payload = r.payload;
      typ = r.protectedHeader.typ;
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) {
        throw identityErrors.access_token_expired({ cause: err });
      }
      throw identityErrors.access_token_invalid({ cause: err });
    }
    if (
      typ !== ACCESS_TOKEN_TYP || payload.iss !== this.settings.issuer || typeof payload.aud !== "string" ||
      !audiences.includes(payload.aud) ||
      typeof payload.sub !== "string" || typeof payload.jti !== "string" || typeof payload.exp !== "number"
    ) {
      throw identityErrors.not_an_access_token();
    }
    return {
      credentialId: payload.sub,
      claimed: payload.claimed === true,
      accountId: typeof payload.acct === "string" ? payload.acct : null,
      tokenId: payload.jti,
      expiresAt: payload.exp,
    };
  }

  async #sign(typ: string, claims: Record<string, unknown>, iat: number, exp: number): Promise<string> {
    const key = await this.keys.current();
    return await new SignJWT(claims)
      .setProtectedHeader({ alg: SIGNING_ALG, typ, kid: key.kid })
      .setIssuer(this.settings.issuer)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(base64url(randomBytes(16)))
      .sign(key.privateKey);
  }

  #verify(token: string) {
    return jwtVerify(token, async (header) => {
      const key = header.kid ? await this.keys.publicKey(header.kid) : null;
      if (!key) throw new joseErrors.JWKSNoMatchingKey();
      return key;
    }, { algorithms: [SIGNING_ALG], currentDate: this.clock.now() });
  }
}
