/**
 * The payproxy room's public face: the secret store, the signature verifier, the allowance client
 * and their counters, wired over the shared stores.
 */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { AllowanceClient, PayproxyMetrics } from "./allowance.ts";
import { PayproxySecretStore } from "./secrets.ts";
import { SignatureVerifier } from "./signature.ts";

export { AllowanceClient, PayproxyMetrics, serviceSlug } from "./allowance.ts";
export { PayproxySecretStore } from "./secrets.ts";
export { pathAndQuery, SignatureVerifier, signRequest } from "./signature.ts";

/** Everything the payproxy routes (and the storefront's signer) need. */
export interface PayproxyServices {
  secrets: PayproxySecretStore;
  verifier: SignatureVerifier;
  allowance: AllowanceClient;
  metrics: PayproxyMetrics;
}

/** Builds the payproxy services. Pure wiring: no I/O. */
export function createPayproxyServices(
  { config, kv, clock, log, fetch }: {
    config: Pick<Config, "agentAuthUrl" | "payproxySkewS" | "allowanceTimeoutMs" | "allowanceCacheMs">;
    kv: Deno.Kv;
    clock: Clock;
    log: Logger;
    fetch: typeof globalThis.fetch;
  },
): PayproxyServices {
  const secrets = new PayproxySecretStore(kv, clock);
  const metrics = new PayproxyMetrics();
  return {
    secrets,
    metrics,
    verifier: new SignatureVerifier({ keys: secrets, kv, clock, skewS: config.payproxySkewS }),
    allowance: new AllowanceClient({
      agentAuthUrl: config.agentAuthUrl,
      fetch,
      clock,
      log,
      timeoutMs: config.allowanceTimeoutMs,
      cacheMs: config.allowanceCacheMs,
      metrics,
    }),
  };
}
