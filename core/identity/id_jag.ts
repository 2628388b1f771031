import {
  createRemoteJWKSet,
  customFetch,
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  type JWTPayload,
  jwtVerify,
} from "jose";
import type { Clock } from "../clock.ts";
import { unixSeconds } from "../clock.ts";
import type { TrustedIssuer } from "../config.ts";
import { AppError } from "../errors.ts";
import { identityErrors } from "./errors.ts";
import { isEmail, normalizeEmail } from "./emails.ts";

/** The `typ` an ID-JAG carries (draft-ietf-oauth-identity-assertion-authz-grant). */
export const ID_JAG_TYP = "oauth-id-jag+jwt";
/** `assertion_type` of an identity_assertion registration. */
export const ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag";
/** Asymmetric algorithms only: an HMAC "signed" with a published public key proves nothing. */
export const ID_JAG_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
];
/** Spec 5.3 and 8: `exp` at most 10 minutes ahead, `auth_time` within 30 days. */
export const ID_JAG_MAX_LIFETIME_S = 600;
export const ID_JAG_MAX_AUTH_AGE_S = 30 * 86400;
/**
 * How far the identity provider's clock may run ahead of ours: `nbf` and `auth_time` that far in the
 * future are clock skew, more is a bad assertion (`iat` is not checked: jose reads it only with a
 * `maxTokenAge`, and `exp` bounds the lifetime). `exp` gets none: an expired ID-JAG is refused.
 */
export const ID_JAG_CLOCK_SKEW_S = 60;

/** What a verified ID-JAG tells us. */
export interface VerifiedIdJag {
  issuer: string;
  subject: string | null;
  /** Lowercased verified address. */
  email: string;
  jti: string;
  exp: number;
}

/**
 * Verifies ID-JAGs from the trusted issuers (spec 5.3.3) and consumes each `jti` once. Each
 * issuer's JWKS is fetched through the injected fetch, cached, and refetched on an unknown `kid`
 * (at most every 30 s). Every jose error is translated here into a storefront code.
 */
export class IdJagVerifier {
  #jwks = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

  constructor(
    private readonly kv: Deno.Kv,
    private readonly clock: Clock,
    private readonly opts: {
      trustedIssuers: TrustedIssuer[];
      /** Accepted audiences: the network authorization-server issuer and the storefront resource. */
      audiences: string[];
      fetch: typeof fetch;
      jwksTimeoutMs?: number;
    },
  ) {}

  /**
   * @throws AppError `invalid_request` 400, `issuer_not_enabled` 403, `invalid_signature` 401,
   * `expired` 401, `invalid_audience` 401, `login_required` 401, `missing_verified_email` 403,
   * `replay_detected` 401, `identity_provider_unavailable` 503.
   */
  async verify(assertion: string): Promise<VerifiedIdJag> {
    let header: ReturnType<typeof decodeProtectedHeader>;
    let unverified: JWTPayload;
    try {
      header = decodeProtectedHeader(assertion);
      unverified = decodeJwt(assertion);
    } catch (err) {
      throw identityErrors.jag_not_jwt({ cause: err });
    }
    // Media type names are case-insensitive and may carry the "application/" prefix (RFC 7515 4.1.9).
    if (typeof header.typ !== "string" || header.typ.toLowerCase().replace(/^application\//, "") !== ID_JAG_TYP) {
      throw identityErrors.jag_wrong_typ({ typ: ID_JAG_TYP });
    }
    if (typeof header.alg !== "string" || !ID_JAG_ALGORITHMS.includes(header.alg)) {
      throw identityErrors.jag_symmetric_alg();
    }
    const trusted = this.opts.trustedIssuers.find((t) => t.issuer === unverified.iss);
    if (!trusted) throw identityErrors.issuer_not_enabled();

    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(assertion, this.#keySet(trusted), {
        algorithms: ID_JAG_ALGORITHMS,
        issuer: trusted.issuer,
        typ: ID_JAG_TYP,
        requiredClaims: ["exp", "jti"],
        currentDate: this.clock.now(),
        // jose gives the tolerance to exp as well: exp is checked without it below.
        clockTolerance: ID_JAG_CLOCK_SKEW_S,
      }));
    } catch (err) {
      throw translate(err);
    }

    const now = unixSeconds(this.clock);
    if (payload.exp! <= now) throw identityErrors.jag_expired();
    const aud = Array.isArray(payload.aud) && payload.aud.length === 1 ? payload.aud[0] : payload.aud;
    if (typeof aud !== "string" || !this.opts.audiences.includes(aud)) {
      throw identityErrors.invalid_audience();
    }
    const exp = payload.exp!;
    if (exp - now > ID_JAG_MAX_LIFETIME_S) {
      throw identityErrors.jag_exp_too_far();
    }
    const authTime = payload.auth_time;
    if (typeof authTime !== "number" || !Number.isFinite(authTime) || now - authTime > ID_JAG_MAX_AUTH_AGE_S) {
      throw identityErrors.login_required();
    }
    if (authTime - now > ID_JAG_CLOCK_SKEW_S) {
      throw identityErrors.jag_auth_time_future();
    }
    if (!isEmail(payload.email) || payload.email_verified !== true) {
      throw identityErrors.missing_verified_email();
    }
    const jti = payload.jti!;
    if (typeof jti !== "string" || jti.length === 0 || jti.length > 256) {
      throw identityErrors.jag_jti_invalid();
    }

    // Single use: the first verifier to write the jti wins; it is kept until the assertion expires.
    const key = ["id_jag_jti", trusted.issuer, jti];
    const res = await this.kv.atomic().check({ key, versionstamp: null })
      .set(key, exp * 1000, { expireIn: Math.max(1, exp - now + 60) * 1000 }).commit();
    if (!res.ok) throw identityErrors.replay_detected();

    return {
      issuer: trusted.issuer,
      subject: typeof payload.sub === "string" ? payload.sub : null,
      email: normalizeEmail(payload.email),
      jti,
      exp,
    };
  }

  #keySet(t: TrustedIssuer) {
    let set = this.#jwks.get(t.issuer);
    if (!set) {
      set = createRemoteJWKSet(new URL(t.jwksUrl), {
        timeoutDuration: this.opts.jwksTimeoutMs ?? 5_000,
        cooldownDuration: 30_000,
        cacheMaxAge: 10 * 60_000,
        [customFetch]: (url, init) => this.opts.fetch(url, init),
      });
      this.#jwks.set(t.issuer, set);
    }
    return set;
  }
}

// Claim names jose checks for us; any other name is reported as "a claim".
const KNOWN_CLAIMS = new Set(["iss", "sub", "aud", "exp", "nbf", "iat", "jti", "typ", "email", "auth_time"]);

/** jose's errors -> our codes. Anything about the key set itself means the provider is unreachable or broken. */
function translate(err: unknown): AppError {
  if (err instanceof joseErrors.JWTExpired) return identityErrors.jag_expired({ cause: err });
  if (
    err instanceof joseErrors.JWSSignatureVerificationFailed || err instanceof joseErrors.JWKSNoMatchingKey ||
    err instanceof joseErrors.JWKSMultipleMatchingKeys || err instanceof joseErrors.JOSEAlgNotAllowed ||
    err instanceof joseErrors.JOSENotSupported || err instanceof joseErrors.JWSInvalid
  ) {
    return identityErrors.invalid_signature({ cause: err });
  }
  // Our own words only: jose's messages stay in the log (as the cause), never in a response.
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    const claim = KNOWN_CLAIMS.has(err.claim) ? `the ${err.claim} claim` : "a claim";
    const problem = err.reason === "missing" ? "is missing" : "failed its check";
    return identityErrors.jag_claim_invalid({ claim, problem }, { cause: err });
  }
  if (err instanceof joseErrors.JWTInvalid) {
    return identityErrors.jag_malformed({ cause: err });
  }
  return identityErrors.identity_provider_unavailable({ cause: err });
}
