/**
 * The payproxy gate (spec 5.2): the protocol around one signed call, without HTTP. A route reads
 * the raw body and headers, calls {@link PayproxyGate.admit}, runs its handler, asks the
 * admission for the allowance before billable work, and calls `settle` for the `zc-usage` value.
 *
 * The single-use mark is a durable KV commit, milliseconds under load, so it is not waited for
 * idly: `admit` returns with the mark under way, and {@link Admission.whileConsuming} runs steps
 * meanwhile. Whatever those steps did, a refused mark answers the 401, and only a confirmed one
 * lets a result out. A replay this process remembers is refused at once, before any work.
 */
import type { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { type AllowanceClient, FULL_TEXT_METER, type PayproxyMetrics, type UsageItem } from "./allowance.ts";
import { payproxyErrors as errors } from "./errors.ts";
import {
  type CheckedHeaders,
  SignatureError,
  type SignatureVerifier,
  type VerifiedRequest,
  type VerifyInput,
} from "./signature.ts";

/** Every payproxy call is metered as one `query`. */
export const QUERY_USAGE: readonly UsageItem[] = [{ meterSlug: "query", quantity: 1 }];

/** A call past the signature: who it is for, and the steps the protocol still owes. */
export interface Admission {
  verified: VerifiedRequest;
  /** Caller identity for logs and analytics: `<prefix>:<agent-id>`, or the prefix alone. */
  caller: string;
  /**
   * Runs `steps` while the single-use mark commits; the mark's refusal wins over any outcome of
   * theirs (a 401 even when a step also failed), and a result leaves only once the mark is confirmed.
   * A replay this process remembers is refused before the steps run.
   */
  whileConsuming<T>(steps: () => Promise<T>): Promise<T>;
  /**
   * Step 6: asks the payment layer whether the agent may use one `query` of `serviceSlug`.
   * @throws {AppError} 402 `payment_required` (body: `serviceSlug`, `usage`) when denied; an outage fails open
   */
  requireAllowance(serviceSlug: string): Promise<void>;
  /** The call was served: counts it and returns the `zc-usage` value (`fullTexts` adds the full-text meter). */
  settle(serviceSlug: string, fullTexts?: number): string;
}

export class PayproxyGate {
  constructor(
    private readonly o: {
      verifier: SignatureVerifier;
      allowance: AllowanceClient;
      metrics: PayproxyMetrics;
      log: Logger;
    },
  ) {}

  /**
   * Step 3, the part without the body: the signature header, the ids, the timestamp and the key,
   * so a request that cannot verify is refused before its body is read.
   * @returns what {@link admit} then takes as the input's `checked`, so it does not check them again
   * @throws {AppError} 401 `invalid_payproxy_signature`, counted as {@link admit} counts it
   */
  async checkHeaders(input: Pick<VerifyInput, "signature" | "requestId" | "agentId">): Promise<CheckedHeaders> {
    try {
      return await this.o.verifier.checkHeaders(input);
    } catch (err) {
      if (!(err instanceof SignatureError)) throw err;
      this.o.metrics.requests.rejected++;
      throw errors.invalid_payproxy_signature({ cause: err });
    }
  }

  /**
   * Step 3: verifies the signature and starts its single-use mark. A signature used before is
   * refused by {@link Admission.whileConsuming}: at once, before any step, when this process made
   * the mark; otherwise when KV has decided.
   * @param callerPrefix `payproxy` or `zeroclick` (the path family)
   * @param requestId this service's id of the request, for logs
   * @throws {AppError} 401 `invalid_payproxy_signature` for a signature that does not verify (the
   *   reason is its cause)
   */
  async admit(input: VerifyInput, callerPrefix: string, requestId?: string): Promise<Admission> {
    const { verifier, metrics, log } = this.o;
    let verified: VerifiedRequest;
    try {
      verified = await verifier.check(input);
    } catch (err) {
      if (!(err instanceof SignatureError)) throw err;
      metrics.requests.rejected++;
      throw errors.invalid_payproxy_signature({ cause: err });
    }
    log.debug("payproxy signature verified", {
      request_id: requestId,
      zc_request_id: verified.requestId,
      kid: verified.kid,
      seller: verified.sellerId,
    });
    const claim = verifier.claim(verified);
    // A replay this process remembers is known now: refused before any step runs.
    const refusedAtOnce = claim instanceof Promise ? null : claim;
    if (refusedAtOnce) metrics.requests.rejected++;
    // Settles to the 401 of a replay, never rejects: it can wait unobserved while steps run.
    const consumed: Promise<AppError | Error | null> = refusedAtOnce
      ? Promise.resolve(refusedAtOnce)
      : (claim as Promise<void>).then(() => {
        metrics.requests.verified++;
        return null;
      }, (err: unknown) => {
        if ((err as AppError | null)?.kind === "unauthenticated") metrics.requests.rejected++;
        return (err as Error | null) ?? new Error("single-use mark failed");
      });
    return {
      verified,
      caller: verified.agentId ? `${callerPrefix}:${verified.agentId}` : callerPrefix,
      whileConsuming: async <T>(steps: () => Promise<T>): Promise<T> => {
        if (refusedAtOnce) throw refusedAtOnce;
        let result: T;
        try {
          result = await steps();
        } catch (err) {
          throw (await consumed) ?? err;
        }
        const refused = await consumed;
        if (refused) throw refused;
        return result;
      },
      requireAllowance: (slug) => this.#requireAllowance(verified, slug, requestId),
      settle: (slug, fullTexts = 0) => {
        metrics.requests.served++;
        const usage = fullTexts > 0
          ? [...QUERY_USAGE, { meterSlug: FULL_TEXT_METER, quantity: fullTexts }]
          : QUERY_USAGE;
        return JSON.stringify(usage.map((u) => ({ serviceSlug: slug, ...u })));
      },
    };
  }

  async #requireAllowance(verified: VerifiedRequest, slug: string, requestId?: string): Promise<void> {
    const usage = QUERY_USAGE as UsageItem[];
    const decision = await this.o.allowance.check(
      { agentId: verified.agentId, serviceSlug: slug, usage },
      { kid: verified.kid, secret: verified.key },
      { requestId },
    );
    if (!decision.allowed) {
      this.o.metrics.requests.paymentRequired++;
      throw errors.payment_required({ extra: { serviceSlug: slug, usage } });
    }
  }
}
