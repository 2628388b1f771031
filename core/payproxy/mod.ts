/**
 * The payproxy room's public face: the secret store, the signature verifier, the allowance client,
 * their counters, and the gate that runs the protocol around one signed call, wired over the
 * shared stores.
 */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { AllowanceClient, PayproxyMetrics } from "./allowance.ts";
import { PayproxySecretStore } from "./secrets.ts";
import { SignatureVerifier } from "./signature.ts";
import { PayproxyGate } from "./gate.ts";

/** Everything the payproxy routes (and the storefront's signer) need. */
export interface PayproxyServices {
  secrets: PayproxySecretStore;
  verifier: SignatureVerifier;
  allowance: AllowanceClient;
  metrics: PayproxyMetrics;
  /** Verify, consume, allowance and usage around one signed call (the routes do HTTP only). */
  gate: PayproxyGate;
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
  const verifier = new SignatureVerifier({ keys: secrets, kv, clock, skewS: config.payproxySkewS });
  const allowance = new AllowanceClient({
    agentAuthUrl: config.agentAuthUrl,
    fetch,
    clock,
    log,
    timeoutMs: config.allowanceTimeoutMs,
    cacheMs: config.allowanceCacheMs,
    metrics,
  });
  return {
    secrets,
    metrics,
    verifier,
    allowance,
    gate: new PayproxyGate({ verifier, allowance, metrics, log }),
  };
}

export {
  AGENT_ID_HEADER,
  pathAndQuery,
  REQUEST_ID_HEADER,
  SIGNATURE_HEADER,
  SignatureVerifier,
  signRequest,
  USAGE_HEADER,
} from "./signature.ts";
export type { CheckedHeaders } from "./signature.ts";

export { AllowanceClient, FULL_TEXT_METER, PayproxyMetrics, serviceSlug } from "./allowance.ts";
export { PayproxyGate, QUERY_USAGE } from "./gate.ts";
export type { Admission } from "./gate.ts";
export { payproxyErrors } from "./errors.ts";
export { PayproxySecretStore, SecretStoreError } from "./secrets.ts";
export { marketplaceAiModel, marketplaceDataModel } from "./marketplace.ts";
