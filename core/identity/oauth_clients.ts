import { boundedCache } from "../bounded_cache.ts";
import { type Clock, KV_EXPIRY_SLACK_MS } from "../clock.ts";
import { base64url, randomBytes } from "../crypto.ts";
import type { Logger } from "../log.ts";
import type { SafeFetcher } from "../net/mod.ts";
import { withoutDisguise } from "../text/mod.ts";
import { MAX_URI_CHARS, oauthErrors, type RedirectUriProblem } from "./oauth_errors.ts";
import type { OAuthClient } from "./types.ts";

/**
 * Registrations one client address may make a day. An MCP client registers once per server; each
 * registration is kept 30 days (a body of up to 16 KiB), so the per-minute limit alone let one
 * address store about 20 GB a month.
 */
export const REGISTRATIONS_PER_ADDRESS_PER_DAY = 100;
/** Redirect URIs one client may register. */
export const MAX_REDIRECT_URIS = 10;
const MAX_NAME_CHARS = 128;
const CLIENT_ID_RE = /^oc_[A-Za-z0-9_-]{22}$/;
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);
// RFC 8252 section 7.1: a private-use scheme is a reverse domain name (has a dot).
const PRIVATE_SCHEME_RE = /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/;
const GRANTS = new Set(["authorization_code", "refresh_token"]);

/**
 * Whether a redirect URI may be registered: https anywhere, http only to a loopback host
 * (RFC 8252 native and local clients), or a private-use reverse-domain scheme; never a fragment,
 * never credentials in the URL, never `javascript:` or `data:`.
 */
export function redirectUriProblem(uri: unknown): RedirectUriProblem | null {
  if (typeof uri !== "string" || uri.length === 0) return "redirect_uri_empty";
  if (uri.length > MAX_URI_CHARS) return "redirect_uri_too_long";
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "redirect_uri_not_absolute";
  }
  if (url.hash || uri.includes("#")) return "redirect_uri_fragment";
  if (url.username || url.password) return "redirect_uri_credentials";
  if (url.protocol === "https:") return null;
  if (url.protocol === "http:") return LOOPBACK_HOSTS.has(url.hostname) ? null : "redirect_uri_http_not_loopback";
  return PRIVATE_SCHEME_RE.test(url.protocol) ? null : "redirect_uri_scheme";
}

/**
 * Whether `asked` names one of the `registered` redirect URIs: byte for byte, except the port of a
 * loopback http URI (RFC 8252 section 7.3: a native client listens on a port the operating system
 * gives it when it starts). Scheme, host, path and query must still be the registered ones, and
 * `asked` must be in its normal form, so the URI the code is bound to is the one the browser is sent to.
 * @example isRegisteredRedirect(["http://127.0.0.1:53682/cb"], "http://127.0.0.1:60111/cb") // true
 * @example isRegisteredRedirect(["http://127.0.0.1:53682/cb"], "http://localhost:53682/cb") // false
 */
export function isRegisteredRedirect(registered: readonly string[], asked: string): boolean {
  if (registered.includes(asked)) return true;
  const portless = loopbackWithoutPort(asked);
  return portless !== null && new URL(asked).href === asked &&
    registered.some((r) => loopbackWithoutPort(r) === portless);
}

/** A loopback http URI without its port (`http://127.0.0.1/cb?x`), or null for any other URI. */
function loopbackWithoutPort(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" || !LOOPBACK_HOSTS.has(url.hostname)) return null;
  if (url.username || url.password || uri.includes("#")) return null;
  return `http://${url.hostname}${url.pathname}${url.search}`;
}

/**
 * Whether the authorization endpoint may send the browser to a registered redirect URI without the
 * human's click (an error of the request): a loopback address or an app's private-use scheme stays
 * on the human's own machine. An https URI is whatever its registrant chose (registration is open),
 * so redirecting there on a malformed request would make our origin an open redirector (RFC 9700
 * section 4.11.2): the page asks first.
 * @example redirectsUnasked("http://127.0.0.1:53682/cb") // true
 * @example redirectsUnasked("https://phish.example/cb") // false
 */
export function redirectsUnasked(uri: string): boolean {
  const url = new URL(uri);
  return url.protocol !== "https:" || LOOPBACK_HOSTS.has(url.hostname);
}

/**
 * A client's name as the consent page shows it: one line without disguising characters. A bidi
 * override in the name reorders what follows it on the page (the document host beside it, the
 * seller's name), so the human would read a host other than the one serving the document.
 */
function clientLabel(name: unknown): { clientName: string } | Record<never, never> {
  const label = typeof name === "string" ? withoutDisguise(name).replace(/\s+/g, " ").trim() : "";
  return label ? { clientName: label } : {};
}

/** Whether a client_id is a client ID metadata document URL (https, with a path). */
export function isMetadataDocumentUrl(clientId: string): boolean {
  if (!clientId.startsWith("https://") || clientId.length > MAX_URI_CHARS) return false;
  try {
    const url = new URL(clientId);
    return url.pathname !== "/" && !url.hash && !url.username && !url.password;
  } catch {
    return false;
  }
}

/** A used registration is written at most this often (a client refreshes every few minutes). */
const RENEW_EVERY_MS = 86_400_000;
const DOCUMENT_MAX_BYTES = 16 * 1024;
const DOCUMENT_FRESH_MS = 5 * 60_000;
const DOCUMENT_FAILED_MS = 60_000;

/**
 * The clients of the authorization code flow, public only (`token_endpoint_auth_method` none;
 * PKCE proves possession), known two ways:
 * - RFC 7591 dynamic registration: records live `CLIENT_TTL_S` in KV from registration or from
 *   their latest grant ({@link OAuthClients.renew}); a client that is gone registers again (the MCP
 *   SDK does so on `invalid_client`);
 * - client ID metadata documents (the MCP authorization spec): the client_id is an https URL whose
 *   JSON names the client and its redirect URIs. Fetched through the SSRF guard (public addresses,
 *   16 KiB, no redirects), cached a few minutes (a failure one minute).
 */
export class OAuthClients {
  /** How long a registration lives. */
  static readonly CLIENT_TTL_S = 30 * 86_400;
  readonly #documents = boundedCache<string, { client: OAuthClient } | { failed: true }>({ max: 1000 });

  constructor(
    private readonly kv: Deno.Kv,
    private readonly clock: Clock,
    private readonly documents?: { fetcher: SafeFetcher; log: Logger },
  ) {}

  /** Whether client ID metadata documents are accepted (a fetcher was given). */
  get documentsSupported(): boolean {
    return this.documents !== undefined;
  }

  /**
   * Registers a client from its metadata document.
   * @throws AppError 400 `invalid_redirect_uri` or `invalid_client_metadata`.
   */
  async register(metadata: Record<string, unknown>): Promise<OAuthClient> {
    const uris = metadata.redirect_uris;
    if (!Array.isArray(uris) || uris.length === 0) {
      throw oauthErrors.redirect_uris_empty();
    }
    if (uris.length > MAX_REDIRECT_URIS) {
      throw oauthErrors.redirect_uris_too_many({ max: MAX_REDIRECT_URIS });
    }
    for (const uri of uris) {
      const problem = redirectUriProblem(uri);
      if (problem) throw oauthErrors[problem]();
    }
    const name = metadata.client_name;
    if (name !== undefined && (typeof name !== "string" || name.length > MAX_NAME_CHARS)) {
      throw oauthErrors.client_name_invalid({ max: MAX_NAME_CHARS });
    }
    const grants = metadata.grant_types;
    if (grants !== undefined && (!Array.isArray(grants) || grants.some((g) => !GRANTS.has(g)))) {
      throw oauthErrors.grant_types_invalid();
    }
    const types = metadata.response_types;
    if (types !== undefined && (!Array.isArray(types) || types.some((t) => t !== "code"))) {
      throw oauthErrors.response_types_invalid();
    }
    const client: OAuthClient = {
      clientId: "oc_" + base64url(randomBytes(16)),
      ...clientLabel(name),
      redirectUris: [...new Set(uris as string[])],
      createdAt: this.clock.now().toISOString(),
    };
    await this.kv.set(["oauth_client", client.clientId], client, {
      expireIn: OAuthClients.CLIENT_TTL_S * 1000 + KV_EXPIRY_SLACK_MS,
    });
    return client;
  }

  /** A registered client or a client ID metadata document's, or null (unknown, malformed, expired, unreadable). */
  async get(clientId: string | null | undefined): Promise<OAuthClient | null> {
    if (clientId && this.documents && isMetadataDocumentUrl(clientId)) return await this.#document(clientId);
    if (!clientId || !CLIENT_ID_RE.test(clientId)) return null;
    const client = (await this.kv.get<OAuthClient>(["oauth_client", clientId])).value;
    if (!client) return null;
    const ageMs = this.clock.now().getTime() - Date.parse(client.renewedAt ?? client.createdAt);
    return ageMs < OAuthClients.CLIENT_TTL_S * 1000 ? client : null;
  }

  /**
   * Keeps a registered client `CLIENT_TTL_S` from its latest grant: the MCP SDK keeps its client_id
   * with its refresh token (which lives longer than a registration), so a client in use must not
   * expire under it. A client ID metadata document's client is not stored and needs nothing.
   */
  async renew(client: OAuthClient): Promise<void> {
    if (!CLIENT_ID_RE.test(client.clientId)) return;
    const now = this.clock.now();
    if (now.getTime() - Date.parse(client.renewedAt ?? client.createdAt) < RENEW_EVERY_MS) return;
    const key = ["oauth_client", client.clientId];
    // Best effort: the grant it follows is committed already (a code spent, a token rotated), so a
    // store error here must not fail it; the next grant renews.
    try {
      const entry = await this.kv.get<OAuthClient>(key);
      if (!entry.value) return;
      // Of two grants at once one renews; the other finds it done.
      await this.kv.atomic().check(entry).set(key, { ...entry.value, renewedAt: now.toISOString() }, {
        expireIn: OAuthClients.CLIENT_TTL_S * 1000 + KV_EXPIRY_SLACK_MS,
      }).commit();
    } catch {
      // Left for the next grant.
    }
  }

  async #document(url: string): Promise<OAuthClient | null> {
    const cached = this.#documents.get(url);
    if (cached) return "client" in cached ? cached.client : null;
    let client: OAuthClient | null = null;
    try {
      const res = await this.documents!.fetcher.fetch(url, {
        accept: ["application/json"],
        maxBytes: DOCUMENT_MAX_BYTES,
        maxRedirects: 0,
        timeoutMs: 3000,
      });
      const doc = res.status === 200 ? JSON.parse(new TextDecoder().decode(res.body)) : null;
      // The document must name itself: a copy served elsewhere is not that client.
      if (doc && typeof doc === "object" && doc.client_id === url) {
        const uris = doc.redirect_uris;
        const name = doc.client_name;
        if (
          Array.isArray(uris) && uris.length > 0 && uris.length <= MAX_REDIRECT_URIS &&
          uris.every((u) => redirectUriProblem(u) === null) &&
          (name === undefined || (typeof name === "string" && name.length <= MAX_NAME_CHARS))
        ) {
          client = {
            clientId: url,
            ...clientLabel(name),
            redirectUris: [...new Set(uris as string[])],
            createdAt: this.clock.now().toISOString(),
          };
        }
      }
    } catch (err) {
      this.documents!.log.warn("client metadata document not read", { error: String((err as Error).message ?? err) });
    }
    this.#documents.set(url, client ? { client } : { failed: true }, {
      ttl: client ? DOCUMENT_FRESH_MS : DOCUMENT_FAILED_MS,
    });
    return client;
  }
}

/** The RFC 7591 response body of a registered client. */
export function registrationBody(client: OAuthClient): Record<string, unknown> {
  return {
    client_id: client.clientId,
    client_id_issued_at: Math.floor(Date.parse(client.createdAt) / 1000),
    redirect_uris: client.redirectUris,
    ...(client.clientName ? { client_name: client.clientName } : {}),
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
}
