import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { FixedWindowLimiter } from "../rate_limit.ts";
import { AccountStore } from "./accounts.ts";
import { ClaimService } from "./claims.ts";
import { IdJagVerifier } from "./id_jag.ts";
import { IdentityService } from "./identity.ts";
import { SigningKeyStore } from "./keys.ts";
import { type Mailer, NoMailer, OutboxMailer, SmtpMailer } from "./mailer.ts";
import { RefreshTokens } from "./refresh_tokens.ts";
import { SellerRegistry } from "./sellers.ts";
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
  /** Per-client-address limiter of the identity and claim routes. */
  limiter: FixedWindowLimiter;
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
  { config, kv, clock, log, fetch, mailer }: {
    config: Config;
    kv: Deno.Kv;
    clock: Clock;
    log: Logger;
    fetch: typeof globalThis.fetch;
    mailer: Mailer;
  },
): Storefront {
  const s = config.storefront;
  // A retired signing key keeps verifying as long as the longest token it signed can live.
  const keys = new SigningKeyStore(kv, clock, Math.max(s.assertionTtlS, s.anonymousTtlS, s.accessTokenTtlS));
  const tokens = new TokenService(keys, clock, {
    issuer: config.networkApiUrl,
    resource: config.agentAuthUrl,
    accessTokenTtlS: s.accessTokenTtlS,
    assertionTtlS: s.assertionTtlS,
  });
  const accounts = new AccountStore(kv, clock);
  const refresh = new RefreshTokens(kv, clock, s.refreshTokenTtlS);
  const claims = new ClaimService(kv, clock, accounts, refresh, tokens, mailer, log, {
    claimTtlS: s.claimTtlS,
    claimPageUrl: (link) => `${config.agentAuthUrl}/claim/${link}`,
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
  return { sellers: new SellerRegistry(kv, clock), keys, tokens, accounts, claims, identity, idJag, limiter };
}
