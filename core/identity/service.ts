import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import type { SafeFetcher } from "../net/mod.ts";
import { FixedWindowLimiter } from "../rate_limit.ts";
import { AccountStore } from "./accounts.ts";
import { ClaimService } from "./claims.ts";
import { IdJagVerifier } from "./id_jag.ts";
import { IdentityService } from "./identity.ts";
import { SigningKeyStore } from "./keys.ts";
import { type Mailer, NoMailer, OutboxMailer, SmtpMailer } from "./mailer.ts";
import { OAuthService } from "./oauth.ts";
import { OAuthClients, REGISTRATIONS_PER_ADDRESS_PER_DAY } from "./oauth_clients.ts";
import { RefreshTokens } from "./refresh_tokens.ts";
import { sellerBaseUrl, SellerRegistry } from "./sellers.ts";
import { TokenService } from "./tokens.ts";

/** The storefront's services, built once per process (`deps.storefront`). */
export interface Storefront {
  sellers: SellerRegistry;
  keys: SigningKeyStore;
  tokens: TokenService;
  accounts: AccountStore;
  claims: ClaimService;
  identity: IdentityService;
  idJag: IdJagVerifier;
  /** OAuth 2.1 authorization code flow for MCP clients (registration, codes, refresh). */
  oauth: OAuthService;
  /** Per-client-address limiter of the identity and claim routes. */
  limiter: FixedWindowLimiter;
  /** Per-client-address daily limiter of dynamic client registration (what it stores lives 30 days). */
  registrationLimiter: FixedWindowLimiter;
}

/**
 * The mailer the config asks for: SMTP when SMTP_URL is set, the KV outbox only when MAIL_OUTBOX
 * is on, otherwise none (mail is refused, never kept where someone else could read it).
 */
export function createMailer(config: Config, kv: Deno.Kv, clock: Clock): Mailer {
  if (config.mail.smtpUrl) return new SmtpMailer(config.mail.smtpUrl, config.mail.from);
  if (config.mail.outbox) return new OutboxMailer(kv, clock, config.mail.from);
  return new NoMailer();
}

/** Wires the storefront over open stores. Pure: no I/O until a method is called. */
export function createStorefront(
  { config, kv, clock, log, fetch, mailer, safeFetch }: {
    config: Config;
    kv: Deno.Kv;
    clock: Clock;
    log: Logger;
    fetch: typeof globalThis.fetch;
    mailer: Mailer;
    /** SSRF-guarded fetching of OAuth client ID metadata documents; without it only registered clients exist. */
    safeFetch?: SafeFetcher;
  },
): Storefront {
  const s = config.storefront;
  const urlConfig = { agentAuthUrl: config.agentAuthUrl, defaultSellerId: s.defaultSellerId };
  // A retired signing key keeps verifying as long as the longest token it signed can live.
  const keys = new SigningKeyStore(kv, clock, Math.max(s.assertionTtlS, s.anonymousTtlS, s.accessTokenTtlS));
  const tokens = new TokenService(keys, clock, {
    issuer: config.networkApiUrl,
    resource: config.agentAuthUrl,
    accessTokenTtlS: s.accessTokenTtlS,
    assertionTtlS: s.assertionTtlS,
  });
  const accounts = new AccountStore(kv, clock);
  const refresh = new RefreshTokens(kv, clock, s.refreshTokenTtlS, s.assertionTtlS);
  const claims = new ClaimService(kv, clock, accounts, refresh, tokens, mailer, log, {
    claimTtlS: s.claimTtlS,
    claimPageUrl: (link, seller) => `${sellerBaseUrl(seller, urlConfig)}/claim/${link}`,
    mailLimits: {
      perAddress: new FixedWindowLimiter(kv, clock, {
        scope: "claim_mail_to",
        limit: s.claimMail.perAddress,
        windowS: s.claimMail.windowS,
      }),
      perSeller: new FixedWindowLimiter(kv, clock, {
        scope: "claim_mail_seller",
        limit: s.claimMail.perSeller,
        windowS: s.claimMail.windowS,
      }),
    },
  });
  const idJag = new IdJagVerifier(kv, clock, {
    trustedIssuers: s.trustedIssuers,
    audiences: [config.networkApiUrl, config.agentAuthUrl],
    fetch,
  });
  const identity = new IdentityService(kv, clock, accounts, claims, refresh, tokens, idJag, s);
  const limiter = new FixedWindowLimiter(kv, clock, {
    scope: "storefront",
    limit: s.rateLimit,
    windowS: s.rateWindowS,
  });
  const clients = new OAuthClients(kv, clock, safeFetch ? { fetcher: safeFetch, log } : undefined);
  const oauth = new OAuthService(kv, clock, clients, accounts, refresh, tokens, {
    resources: [mcpResource(config), config.agentAuthUrl],
    defaultResource: mcpResource(config),
  });
  const registrationLimiter = new FixedWindowLimiter(kv, clock, {
    scope: "oauth_register",
    limit: REGISTRATIONS_PER_ADDRESS_PER_DAY,
    windowS: 86_400,
  });
  return {
    sellers: new SellerRegistry(kv, clock),
    keys,
    tokens,
    accounts,
    claims,
    identity,
    idJag,
    oauth,
    limiter,
    registrationLimiter,
  };
}

/** The MCP endpoint as an OAuth protected resource (RFC 8707 / RFC 9728 identifier). */
export function mcpResource(config: Config): string {
  return `${config.baseUrl.replace(/\/+$/, "")}/mcp`;
}
