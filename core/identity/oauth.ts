import type { Clock } from "../clock.ts";
import { base64url, fromBase64url, randomBytes, sha256Hex, timingSafeEqual } from "../crypto.ts";
import { AppError } from "../errors.ts";
import type { AccountStore } from "./accounts.ts";
import { isRegisteredRedirect, type OAuthClients } from "./oauth_clients.ts";
import { oauthErrors } from "./oauth_errors.ts";
import type { RefreshTokens } from "./refresh_tokens.ts";
import type { TokenService } from "./tokens.ts";
import type { AuthorizationCodeRecord, AuthorizationRequest, OAuthClient } from "./types.ts";

/** Authorization codes live this long (OAuth 2.1 recommends minutes at most). */
export const CODE_TTL_S = 60;
/**
 * A rotated refresh token presented again this soon is a client's own parallel refresh (the MCP
 * SDK refreshes once per request that met a 401), answered with the live head of its rotations; later it is a
 * replay and revokes the family.
 */
export const REFRESH_REUSE_GRACE_S = 30;
/** The human has this long on the consent page (the e-mailed code included). */
export const REQUEST_TTL_S = 15 * 60;
// RFC 7636 section 4.1/4.2: verifier 43-128 unreserved characters; an S256 challenge is 43 base64url characters.
const VERIFIER_RE = /^[A-Za-z0-9\-._~]{43,128}$/;
const CHALLENGE_RE = /^[A-Za-z0-9_-]{43}$/;
const CODE_RE = /^[A-Za-z0-9_-]{43}$/;
const REQUEST_ID_RE = /^[A-Za-z0-9_-]{43}$/;
const MAX_STATE_CHARS = 1024;

/** The token endpoint's answer to an authorization code or refresh grant. */
export interface OAuthTokens {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
}

/** Why an authorization request cannot go on, and whether the client may be told by redirect. */
export type AuthorizationProblem =
  /** Unknown client or a redirect URI it did not register: shown on our page, never redirected (no open redirect). */
  | { kind: "page"; message: string }
  /** Anything else: sent to the registered redirect URI with the state (RFC 6749 section 4.1.2.1). */
  | { kind: "redirect"; redirectUri: string; state?: string; error: AppError };

/** Settings of the flow: the resources a token may be bound to. */
export interface OAuthSettings {
  /** Allowed `resource` values (RFC 8707), exact strings. */
  resources: string[];
  /** The resource of a request that names none: the MCP endpoint. */
  defaultResource: string;
}

/**
 * OAuth 2.1 authorization code grant with PKCE (S256 only) and rotating refresh tokens, for MCP
 * clients. The human's consent produces one of the storefront's own agent credentials (anonymous,
 * or claimed by the mailbox code); the tokens are the storefront's access tokens bound to the
 * requested resource, so plans and entitlements carry over.
 */
export class OAuthService {
  constructor(
    private readonly kv: Deno.Kv,
    private readonly clock: Clock,
    readonly clients: OAuthClients,
    private readonly accounts: AccountStore,
    private readonly refresh: RefreshTokens,
    private readonly tokens: TokenService,
    private readonly settings: OAuthSettings,
  ) {}

  /** The resources tokens may be bound to. */
  get resources(): readonly string[] {
    return this.settings.resources;
  }

  /**
   * Validates an authorization request's query (RFC 6749 4.1.1, RFC 7636, RFC 8707). The client
   * and its redirect URI are checked first: until both are known, nothing is redirected anywhere.
   */
  async checkAuthorization(
    q: URLSearchParams,
  ): Promise<
    { ok: true; client: OAuthClient; request: Omit<AuthorizationRequest, "expiresAt"> } | AuthorizationProblem
  > {
    const single = (name: string) => (q.getAll(name).length > 1 ? undefined : q.get(name) ?? undefined);
    const client = await this.clients.get(single("client_id"));
    if (!client) return { kind: "page", message: "This application is not registered here (unknown client_id)" };
    const asked = single("redirect_uri");
    const redirectUri = asked ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined);
    if (!redirectUri || !isRegisteredRedirect(client.redirectUris, redirectUri)) {
      return { kind: "page", message: "The redirect_uri is not one this application registered" };
    }
    const state = single("state");
    const fail = (error: AppError): AuthorizationProblem => ({
      kind: "redirect",
      redirectUri,
      ...(state !== undefined && state.length <= MAX_STATE_CHARS ? { state } : {}),
      error,
    });
    if (state !== undefined && state.length > MAX_STATE_CHARS) {
      return fail(oauthErrors.state_too_long({ max: MAX_STATE_CHARS }));
    }
    if (q.get("response_type") !== "code" || q.getAll("response_type").length > 1) {
      return fail(oauthErrors.unsupported_response_type());
    }
    if (q.get("code_challenge_method") !== "S256") {
      return fail(oauthErrors.challenge_method_not_s256());
    }
    const codeChallenge = single("code_challenge");
    if (!codeChallenge || !CHALLENGE_RE.test(codeChallenge)) {
      return fail(oauthErrors.challenge_malformed());
    }
    const resources = q.getAll("resource");
    if (resources.length > 1 || (resources.length === 1 && !this.settings.resources.includes(resources[0]!))) {
      return fail(oauthErrors.resource_not_served());
    }
    return {
      ok: true,
      client,
      request: {
        clientId: client.clientId,
        redirectUri,
        codeChallenge,
        ...(state !== undefined ? { state } : {}),
        resource: resources[0] ?? this.settings.defaultResource,
      },
    };
  }

  /** Keeps a validated request while the human decides; returns its opaque id (for the consent form). */
  async saveRequest(request: Omit<AuthorizationRequest, "expiresAt">): Promise<string> {
    const id = base64url(randomBytes(32));
    const expiresAt = new Date(this.clock.now().getTime() + REQUEST_TTL_S * 1000).toISOString();
    await this.kv.set(["oauth_request", await sha256Hex(id)], { ...request, expiresAt }, {
      expireIn: (REQUEST_TTL_S + 3600) * 1000,
    });
    return id;
  }

  /** The pending request of a consent form, or null (unknown, expired or already decided). */
  async loadRequest(id: string): Promise<Deno.KvEntry<AuthorizationRequest> | null> {
    if (!REQUEST_ID_RE.test(id)) return null;
    const entry = await this.kv.get<StoredRequest>(["oauth_request", await sha256Hex(id)]);
    if (!entry.value || Date.parse(entry.value.expiresAt) <= this.clock.now().getTime()) return null;
    const { sealedClaim, ...request } = entry.value;
    // A request stored before claims were sealed holds its claim as is.
    const claim = sealedClaim ? await openClaim(id, sealedClaim) : request.claim;
    return { ...entry, value: { ...request, ...(claim ? { claim } : {}) } } as Deno.KvEntry<AuthorizationRequest>;
  }

  /**
   * Records the claim the human started on the consent page, sealed with the request id: the claim
   * token and link reach the store only encrypted, under a key only the consent form holds.
   */
  async attachClaim(id: string, claim: NonNullable<AuthorizationRequest["claim"]>): Promise<void> {
    const entry = await this.loadRequest(id);
    if (!entry) return;
    const { claim: _previous, ...request } = entry.value;
    const stored: StoredRequest = { ...request, sealedClaim: await sealClaim(id, claim) };
    // Against the entry read: a request decided meanwhile (another tab) is not brought back to life.
    await this.kv.atomic().check(entry).set(entry.key, stored, { expireIn: (REQUEST_TTL_S + 3600) * 1000 }).commit();
  }

  /**
   * Ends a pending request (consent given or denied), exactly once: of two submissions of the same
   * form one wins, the other gets null.
   */
  async takeRequest(id: string): Promise<AuthorizationRequest | null> {
    const entry = await this.loadRequest(id);
    if (!entry) return null;
    const res = await this.kv.atomic().check(entry).delete(entry.key).commit();
    return res.ok ? entry.value : null;
  }

  /** A fresh single-use code for a decided request, bound to the credential the human chose. */
  async issueCode(request: AuthorizationRequest, credentialId: string): Promise<string> {
    const code = base64url(randomBytes(32));
    const record: AuthorizationCodeRecord = {
      clientId: request.clientId,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      resource: request.resource,
      credentialId,
      expiresAt: new Date(this.clock.now().getTime() + CODE_TTL_S * 1000).toISOString(),
    };
    // Kept a while past expiry so a replay is recognised (and revokes what the code produced).
    await this.kv.set(["oauth_code", await sha256Hex(code)], record, { expireIn: (CODE_TTL_S + 3600) * 1000 });
    return code;
  }

  /**
   * The authorization code grant. The code is consumed atomically before anything is minted; a
   * second use of a spent code fails and revokes the refresh family the first use produced.
   * @throws AppError `invalid_client` 401, `invalid_grant` / `invalid_target` / `invalid_request` 400.
   */
  async exchangeCode(p: {
    code: string | null;
    clientId: string | null;
    redirectUri: string | null;
    codeVerifier: string | null;
    resource: string | null;
  }): Promise<OAuthTokens> {
    const client = await this.clients.get(p.clientId);
    if (!client) throw oauthErrors.invalid_client();
    if (!p.code) throw oauthErrors.code_required();
    if (!p.codeVerifier) throw oauthErrors.code_verifier_required();
    if (!p.redirectUri) throw oauthErrors.redirect_uri_required();
    if (!CODE_RE.test(p.code)) throw oauthErrors.code_unknown();
    const key = ["oauth_code", await sha256Hex(p.code)];
    const entry = await this.kv.get<AuthorizationCodeRecord>(key);
    const rec = entry.value;
    if (!rec) throw oauthErrors.code_unknown();
    if (rec.usedFamilyId !== undefined) {
      // RFC 6749 section 4.1.2: a code used twice revokes the tokens issued with it.
      await this.refresh.revokeFamily(rec.usedFamilyId);
      throw oauthErrors.code_reused();
    }
    if (Date.parse(rec.expiresAt) <= this.clock.now().getTime()) {
      throw oauthErrors.code_expired();
    }
    if (rec.clientId !== client.clientId) throw oauthErrors.code_other_client();
    if (rec.redirectUri !== p.redirectUri) throw oauthErrors.redirect_uri_mismatch();
    if (p.resource !== null && p.resource !== rec.resource) {
      throw oauthErrors.resource_mismatch_request();
    }
    if (!VERIFIER_RE.test(p.codeVerifier)) throw oauthErrors.code_verifier_mismatch();
    const computed = base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(p.codeVerifier))));
    if (!timingSafeEqual(computed, rec.codeChallenge)) {
      throw oauthErrors.code_verifier_mismatch();
    }
    const cred = await this.accounts.credential(rec.credentialId);
    if (!this.accounts.isLive(cred)) throw oauthErrors.code_identity_gone();
    const op = this.kv.atomic().check(entry);
    const refresh = await this.refresh.issueInto(op, cred.credentialId, undefined, {
      clientId: client.clientId,
      resource: rec.resource,
    });
    op.set(key, { ...rec, usedFamilyId: refresh.familyId }, { expireIn: (CODE_TTL_S + 3600) * 1000 });
    // Of two concurrent exchanges one commits; the other sees the code spent.
    if (!(await op.commit()).ok) throw oauthErrors.code_used();
    const { accessToken, expiresIn } = await this.tokens.mintAccessToken(cred, {
      audience: rec.resource,
      clientId: client.clientId,
    });
    await this.clients.renew(client);
    return { access_token: accessToken, token_type: "Bearer", expires_in: expiresIn, refresh_token: refresh.token };
  }

  /**
   * The refresh token grant: rotation, and reuse of a rotated token revokes the family. Only the
   * client the family was granted to may refresh it, for the same resource.
   * @throws AppError `invalid_client` 401, `invalid_grant` / `invalid_target` 400.
   */
  async refreshGrant(p: { refreshToken: string | null; clientId: string | null; resource: string | null }) {
    const client = await this.clients.get(p.clientId);
    if (!client) throw oauthErrors.invalid_client();
    if (!p.refreshToken) throw oauthErrors.refresh_token_required();
    let resource = "";
    let rotated;
    try {
      rotated = await this.refresh.rotate(p.refreshToken, async (credentialId, op, family) => {
        if (!family.oauth || family.oauth.clientId !== client.clientId) {
          throw oauthErrors.refresh_other_client();
        }
        if (p.resource !== null && p.resource !== family.oauth.resource) {
          throw oauthErrors.resource_mismatch_grant();
        }
        resource = family.oauth.resource;
        const cred = await this.kv.get(["credential", credentialId]);
        if (!this.accounts.isLive(cred.value as never)) {
          throw oauthErrors.grant_identity_gone();
        }
        op.check(cred);
      }, { reuseGraceS: REFRESH_REUSE_GRACE_S });
    } catch (err) {
      // The store's own refusals (unknown, expired, reused, revoked) are invalid_grant here.
      if (err instanceof AppError && err.code === "invalid_refresh_token") {
        throw oauthErrors.refresh_token_refused({ refusal: err });
      }
      throw err;
    }
    const cred = (await this.accounts.credential(rotated.credentialId))!;
    const { accessToken, expiresIn } = await this.tokens.mintAccessToken(cred, {
      audience: resource,
      clientId: client.clientId,
    });
    await this.clients.renew(client);
    return {
      access_token: accessToken,
      token_type: "Bearer",
      expires_in: expiresIn,
      refresh_token: rotated.token,
    } satisfies OAuthTokens;
  }
}

const enc = new TextEncoder();

/**
 * A pending request as kept in KV (under the SHA-256 of its id): its claim, once the human started
 * one, sealed with AES-256-GCM under a key derived from the request id, which the store never holds
 * (a KV dump or backup then shows no claim token or link).
 */
type StoredRequest = AuthorizationRequest & { sealedClaim?: string };

async function claimKey(id: string): Promise<CryptoKey> {
  // Its own domain: the KV key is the plain SHA-256 of the id, which must not open the claim.
  const raw = Uint8Array.fromHex(await sha256Hex(`oauth_request_claim:${id}`));
  return await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
}

async function sealClaim(id: string, claim: NonNullable<AuthorizationRequest["claim"]>): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv },
    await claimKey(id),
    new TextEncoder().encode(JSON.stringify(claim)),
  );
  const out = new Uint8Array(iv.length + sealed.byteLength);
  out.set(iv);
  out.set(new Uint8Array(sealed), iv.length);
  return base64url(out);
}

/** The claim sealed for this request id, or undefined when it does not open (another id, tampered). */
async function openClaim(id: string, sealed: string): Promise<AuthorizationRequest["claim"]> {
  try {
    const bytes = new Uint8Array(fromBase64url(sealed));
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: bytes.subarray(0, 12) },
      await claimKey(id),
      bytes.subarray(12),
    );
    return JSON.parse(new TextDecoder().decode(plain));
  } catch {
    return undefined;
  }
}
