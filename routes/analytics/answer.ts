import type { Context } from "hono";
import type { AnalyticsCache, CacheStatus } from "../../analytics/cache.ts";
import { supplied } from "../../analytics/filters.ts";
import { type AnalyticsQuery, normaliseQuery, type RollupDeps } from "../../analytics/rollups.ts";
import type { TenantEnv } from "../env.ts";

/** What one analytics endpoint answers with and how its cache key is made. */
export interface AnswerSpec {
  /** Cache namespace (the endpoint). */
  endpoint: string;
  /** Filters echoed in `filters` (spec order); all of them are part of the key. */
  echo: readonly string[];
  /** Further parameters that change the answer (part of the key, never echoed). */
  keyParams?: readonly string[];
  compute: (tenantId: string, q: AnalyticsQuery) => Promise<Record<string, unknown>>;
}

// The misses being computed, per cache (a process has one cache; tests build several).
const inflight = new WeakMap<AnalyticsCache, Map<string, Promise<string>>>();

/**
 * Answers an analytics query from the KV cache or by computing it, outside HTTP: the REST routes
 * (through {@link analyticsAnswerer}) and the MCP tools share it, so one query is one cache entry
 * whichever way it came in. The key is the normalised query (resolved dates and zone), so queries
 * that spell the same window differently share an entry; the `filters` echo is rendered from the
 * caller's own query. `bypass` skips the read and refreshes the entry.
 */
export function cachedAnswerer(cache: AnalyticsCache, deps: RollupDeps) {
  let running = inflight.get(cache);
  if (!running) inflight.set(cache, running = new Map());
  const computing = running;
  /** Computes and stores the entry `k`; concurrent misses of one key (a JSON-RPC batch) share one run. */
  const fill = (k: Deno.KvKey, compute: () => Promise<Record<string, unknown>>) => {
    const id = JSON.stringify(k);
    let run = computing.get(id);
    if (!run) {
      run = (async () => {
        const body = await compute();
        await cache.set(k, JSON.stringify(body));
        return JSON.stringify(body);
      })().finally(() => computing.delete(id));
      computing.set(id, run);
    }
    return run;
  };
  return async function cachedAnswer(
    tenantId: string,
    spec: AnswerSpec,
    q: AnalyticsQuery,
    { bypass = false }: { bypass?: boolean } = {},
  ): Promise<{ body: Record<string, unknown>; status: CacheStatus }> {
    const key = await normaliseQuery(deps, q, [...spec.echo, ...(spec.keyParams ?? [])]);
    let status: CacheStatus;
    let body: Record<string, unknown> | null = null;
    if (!cache.enabled) status = "DISABLED";
    else {
      const k = await cache.key(tenantId, spec.endpoint, key);
      const cached = bypass ? null : await cache.get(k);
      if (cached !== null) body = JSON.parse(cached);
      status = body !== null ? "HIT" : bypass ? "BYPASS" : "MISS";
      // Each waiter gets its own copy: the `filters` echo below is per caller.
      if (body === null) body = JSON.parse(await fill(k, () => spec.compute(tenantId, q)));
    }
    body ??= await spec.compute(tenantId, q);
    if ("filters" in body) body.filters = supplied(q, spec.echo);
    return { body, status };
  };
}

/**
 * Answers an analytics request from the KV cache or by computing it (section 8: `Cache-Control:
 * no-cache` skips the read, `X-Cache` says what happened), through {@link cachedAnswerer}. `query`
 * replaces the request's own query string (the dashboard's combined call answers several panels).
 */
export function analyticsAnswerer(cache: AnalyticsCache, deps: RollupDeps) {
  const cachedAnswer = cachedAnswerer(cache, deps);
  return function answer(
    c: Context<TenantEnv>,
    spec: AnswerSpec,
    query?: AnalyticsQuery,
  ): Promise<{ body: Record<string, unknown>; status: CacheStatus }> {
    const bypass = /(^|,)\s*no-cache\s*(,|$)/i.test(c.req.header("cache-control") ?? "");
    return cachedAnswer(c.get("tenantId"), spec, query ?? c.req.query() as AnalyticsQuery, { bypass });
  };
}

/** The JSON response of an answer. */
export function jsonAnswer(c: Context<TenantEnv>, a: { body: unknown; status: CacheStatus }): Response {
  return c.body(JSON.stringify(a.body), 200, {
    "content-type": "application/json; charset=UTF-8",
    "X-Cache": a.status,
  });
}
