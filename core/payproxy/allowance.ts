/**
 * The allowance client: asks the payment layer whether an agent may spend on a service before
 * billable work runs (spec 5.2 step 9).
 *
 * `POST {AGENT_AUTH_URL}/internal/allowance` with `{agentId, serviceSlug, usage}`, signed with the
 * payproxy scheme (same seller key that verified the incoming request, a fresh `zc-request-id`).
 * Answers:
 * - 2xx `{"allowed": true}` -> allowed; 2xx `{"allowed": false}` -> denied (the route answers 402);
 * - unreachable, no status within the timeout, or 5xx -> a transient outage: allowed ("fail open"),
 *   with a warning log line and the `failOpen` counter;
 * - anything else (3xx, 4xx, a 2xx without a boolean `allowed`, a 2xx whose body does not arrive
 *   whole within the same timeout) -> denied: it is not an outage, so failing open would hand out
 *   free calls on a misconfiguration or a slowed answer. Counted as `unexpected`.
 */
import type { Clock } from "../clock.ts";
import { unixSeconds } from "../clock.ts";
import type { HmacSha256 } from "../crypto.ts";
import type { Logger } from "../log.ts";
import { signRequest } from "./signature.ts";
import { boundedCache, type LRUCache } from "../bounded_cache.ts";
import { readStreamCapped } from "../bytes.ts";

/** The meter of an article's licensed full text (search `contents: {text: true}`), one unit per text. */
export const FULL_TEXT_METER = "full_text";

/** One metered usage line, as in the 402 body and the `zc-usage` header. */
export interface UsageItem {
  meterSlug: string;
  quantity: number;
}

/** The allowance question. `agentId` is `""` when the request named no agent. */
export interface AllowanceRequest {
  agentId: string;
  serviceSlug: string;
  usage: UsageItem[];
}

/** The allowance answer. `failedOpen` marks an allowance granted because the payment layer was out. */
export type AllowanceDecision = { allowed: true; failedOpen: boolean } | { allowed: false };

/** The signing key the allowance call is signed with. */
export interface SigningKey {
  kid: string;
  /** The secret, or its keyed HMAC. */
  secret: string | HmacSha256;
}

/**
 * In-process payproxy counters since start; served as JSON on `GET /payproxy/metrics`.
 * Plain numbers, one process: scrape each instance.
 */
export class PayproxyMetrics {
  allowance = {
    /** Allowance questions (one per request past the model gate). */
    checks: 0,
    allowed: 0,
    denied: 0,
    /** Allowed from a recent `allowed: true` of the payment layer (subset of `allowed`). */
    cached: 0,
    /** Allowed because the payment layer was unreachable, slow or answered 5xx (subset of `allowed`). */
    failOpen: 0,
    failOpenByReason: { unreachable: 0, timeout: 0, server_error: 0 } as Record<FailOpenReason, number>,
    /** HTTP calls made to the payment layer (concurrent identical questions share one). */
    calls: 0,
    /** Calls answered with something that is neither a decision nor an outage (denied). */
    unexpected: 0,
  };
  requests = {
    /** Requests whose signature verified and was used for the first time. */
    verified: 0,
    /** Requests refused with 401 (any reason). */
    rejected: 0,
    /** Requests refused with 402. */
    paymentRequired: 0,
    /** 200 responses carrying `zc-usage`. */
    served: 0,
  };

  /** A JSON-ready copy. */
  snapshot() {
    return structuredClone({ allowance: this.allowance, requests: this.requests });
  }
}

/** Why an allowance check failed open. */
export type FailOpenReason = "unreachable" | "timeout" | "server_error";

/** What one call to the payment layer concluded. */
type CallResult = { allowed: true; failOpen?: FailOpenReason } | { allowed: false };

/**
 * The allowance client; see the module comment for the decision table.
 *
 * A definite `allowed: true` is remembered for `cacheMs` (default 1 s; 0 turns it off) per seller
 * key, agent, service and usage, and concurrent identical questions share one call. Denials and
 * fail-opens are never remembered: a top-up takes effect on the next request, and an outage is
 * asked about again. The payment layer is the only holder of the signing secret, bills the
 * reported `zc-usage` itself and reserves before it forwards a paid call, so a one-second window
 * costs at most a second's worth of calls from an agent that ran out mid-way.
 */
export class AllowanceClient {
  readonly #url: string;
  readonly #fetch: typeof fetch;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #timeoutMs: number;
  readonly #cacheMs: number;
  // Definite allowances, each reused for `cacheMs`.
  readonly #allowed: LRUCache<string, true>;
  readonly #inflight = new Map<string, Promise<CallResult>>();
  readonly metrics: PayproxyMetrics;

  constructor(
    { agentAuthUrl, fetch, clock, log, timeoutMs = 2000, cacheMs = 1000, metrics = new PayproxyMetrics() }: {
      agentAuthUrl: string;
      fetch: typeof globalThis.fetch;
      clock: Clock;
      log: Logger;
      timeoutMs?: number;
      cacheMs?: number;
      metrics?: PayproxyMetrics;
    },
  ) {
    this.#url = `${agentAuthUrl.replace(/\/+$/, "")}/internal/allowance`;
    this.#fetch = fetch;
    this.#clock = clock;
    this.#log = log;
    this.#timeoutMs = timeoutMs;
    this.#cacheMs = cacheMs;
    this.#allowed = boundedCache({ max: 10_000, ttlMs: cacheMs, now: () => clock.now().getTime() });
    this.metrics = metrics;
  }

  /** Asks whether `request` may proceed. Never throws: outages fail open, everything else decides. */
  async check(request: AllowanceRequest, key: SigningKey, context: { requestId?: string } = {}): Promise<
    AllowanceDecision
  > {
    const m = this.metrics.allowance;
    m.checks++;
    const cacheKey = JSON.stringify([key.kid, request.agentId, request.serviceSlug, request.usage]);
    if (this.#allowed.has(cacheKey)) {
      m.allowed++;
      m.cached++;
      return { allowed: true, failedOpen: false };
    }
    let pending = this.#inflight.get(cacheKey);
    if (!pending) {
      pending = this.#call(request, key, context).finally(() => this.#inflight.delete(cacheKey));
      this.#inflight.set(cacheKey, pending);
    }
    const result = await pending;
    if (!result.allowed) {
      m.denied++;
      this.#allowed.delete(cacheKey);
      return { allowed: false };
    }
    m.allowed++;
    if (result.failOpen) {
      m.failOpen++;
      m.failOpenByReason[result.failOpen]++;
      return { allowed: true, failedOpen: true };
    }
    if (this.#cacheMs > 0) this.#allowed.set(cacheKey, true);
    return { allowed: true, failedOpen: false };
  }

  /** One signed call to the payment layer. */
  async #call(request: AllowanceRequest, key: SigningKey, context: { requestId?: string }): Promise<CallResult> {
    this.metrics.allowance.calls++;
    const body = JSON.stringify(request);
    const callId = `alw_${crypto.randomUUID()}`;
    const logFields = {
      request_id: context.requestId,
      allowance_request_id: callId,
      service_slug: request.serviceSlug,
      agent_id: request.agentId,
    };
    const failOpen = (reason: FailOpenReason, why: string): CallResult => {
      this.#log.warn("allowance check failed open", { ...logFields, reason, why });
      return { allowed: true, failOpen: reason };
    };
    const signal = AbortSignal.timeout(this.#timeoutMs);
    let res: Response;
    try {
      const signed = await signRequest({
        secret: key.secret,
        kid: key.kid,
        t: unixSeconds(this.#clock),
        method: "POST",
        url: this.#url,
        body,
        requestId: callId,
        agentId: request.agentId,
      });
      // The timeout holds when the payment layer is this process too (an in-process loopback does
      // not watch the signal).
      res = await withDeadline(signal, () =>
        this.#fetch(this.#url, {
          method: "POST",
          headers: { ...signed.headers, "content-type": "application/json", accept: "application/json" },
          body,
          redirect: "manual",
          signal,
        }));
    } catch (err) {
      if (signal.aborted) return failOpen("timeout", `no answer within ${this.#timeoutMs} ms`);
      return failOpen("unreachable", err instanceof Error ? `${err.name}: ${err.message}` : String(err));
    }
    // From here the payment layer has answered: only its status can still make this an outage. A
    // body that then trickles past the deadline, breaks off or runs long is an answer not understood
    // (denied): failing open on it would give free calls to whoever can slow the answer down.
    if (res.status >= 500) {
      await res.body?.cancel().catch(() => {});
      return failOpen("server_error", `payment layer answered ${res.status}`);
    }
    let allowed: unknown;
    if (res.ok) {
      try {
        const bytes = await withDeadline(signal, () => readStreamCapped(res.body ?? emptyStream(), MAX_ANSWER_BYTES));
        allowed = bytes ? (JSON.parse(new TextDecoder().decode(bytes)) as { allowed?: unknown })?.allowed : undefined;
      } catch {
        allowed = undefined;
      }
    }
    await res.body?.cancel().catch(() => {});
    if (allowed === true) return { allowed: true };
    if (allowed !== false) {
      this.metrics.allowance.unexpected++;
      this.#log.warn("allowance answer not understood; denying", { ...logFields, status: res.status });
    }
    return { allowed: false };
  }
}

// `{"allowed": true}` is a few bytes; anything far larger is not an answer of the payment layer.
const MAX_ANSWER_BYTES = 64 * 1024;
const emptyStream = () => new ReadableStream<Uint8Array>({ start: (c) => c.close() });

/** Runs `work`, rejecting with the signal's reason as soon as it aborts (whether `work` watches it or not). */
function withDeadline<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    work().then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * The service slug a model is sold under: its tool name, else a slug of its name, else its id
 * (spec 7.1, 402 row).
 */
export function serviceSlug(model: { id: string; name?: string; toolName?: string }): string {
  if (model.toolName) return model.toolName;
  const fromName = slugify(model.name ?? "");
  return fromName || model.id;
}

/** Lowercase ASCII slug: accents dropped, runs of anything else become one dash, at most 64 chars. */
export function slugify(text: string): string {
  return text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase().replace(/[^a-z0-9]+/g, "-")
    .slice(0, 64).replace(/^-+|-+$/g, "");
}
