/**
 * The commerce room's public face: catalog, payments, entitlements and the paid proxy wiring.
 * Seams to other rooms: {@link AgentAuthenticator} (identity room), {@link SigningSecrets} and the
 * payproxy signer (payproxy room), {@link SellerDirectory} (identity room's seller registry).
 */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { Repos } from "../store/repos.ts";
import { Catalog, KvSellerDirectory } from "./catalog.ts";
import { type PaymentProcessor, SandboxProcessor } from "./processor.ts";
import { CommerceService } from "./service.ts";
import { KvSigningSecrets, type SigningSecrets } from "./signing.ts";
import type { AgentAuthenticator, SellerDirectory } from "./types.ts";

export { CommerceService } from "./service.ts";
export type { AgentAuthenticator, AuthenticatedAgent } from "./types.ts";

/** Answers every storefront request with `bearer_required` until an identity service is wired. */
export const noAgentAuthenticator: AgentAuthenticator = {
  authenticate() {
    return Promise.reject(
      new AppError(401, "bearer_required", "Registered agent credential needed", {
        detail: "register at POST /agent/identity, exchange at POST /oauth2/token, send Authorization: Bearer <token>",
      }),
    );
  },
};

/** Everything the commerce routes use. `agentAuth` is swappable (the identity room sets it). */
export interface Commerce {
  service: CommerceService;
  catalog: Catalog;
  processor: PaymentProcessor;
  secrets: SigningSecrets;
  sellers: SellerDirectory;
  agentAuth: AgentAuthenticator;
}

/** Builds the commerce services. Pure wiring: no I/O. */
export function createCommerce(
  o: {
    config: Pick<Config, "agentAuthUrl">;
    kv: Deno.Kv;
    clock: Clock;
    log: Logger;
    repos: Repos;
    processor?: PaymentProcessor;
    secrets?: SigningSecrets;
    sellers?: SellerDirectory;
    agentAuth?: AgentAuthenticator;
  },
): Commerce {
  const sellers = o.sellers ?? new KvSellerDirectory(o.kv, o.clock);
  const secrets = o.secrets ?? new KvSigningSecrets(o.kv);
  const processor = o.processor ?? new SandboxProcessor();
  const catalog = new Catalog(o.kv, o.repos, o.clock, sellers);
  const service = new CommerceService({
    kv: o.kv,
    clock: o.clock,
    log: o.log,
    catalog,
    processor,
    secrets,
    agentAuthUrl: o.config.agentAuthUrl,
  });
  return { service, catalog, processor, secrets, sellers, agentAuth: o.agentAuth ?? noAgentAuthenticator };
}
