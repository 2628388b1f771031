import { createRoute, z } from "@hono/zod-openapi";
import type { Deps } from "../composition.ts";
import { familyApp } from "./family.ts";

const healthRoute = createRoute({
  method: "get",
  path: "/healthz",
  tags: ["system"],
  summary: "Liveness: the process answers",
  responses: {
    200: { description: "Alive", content: { "application/json": { schema: z.object({ status: z.literal("ok") }) } } },
  },
});

const readyRoute = createRoute({
  method: "get",
  path: "/readyz",
  tags: ["system"],
  summary: "Readiness: Deno KV and DuckDB answer",
  responses: {
    200: {
      description: "Ready",
      content: {
        "application/json": {
          schema: z.object({ status: z.enum(["ok", "unavailable"]), checks: z.record(z.string(), z.boolean()) }),
        },
      },
    },
    503: { description: "A store does not answer" },
  },
});

/**
 * Whether Deno KV and DuckDB answer (a KV read and a DuckDB ping, side by side); a store that has
 * not answered within `timeoutMs` counts as down.
 */
async function probeStores(
  deps: Pick<Deps, "kv" | "duckdb">,
  { timeoutMs = 2_000 }: { timeoutMs?: number } = {},
): Promise<{ kv: boolean; duckdb: boolean }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), timeoutMs));
  try {
    const [kv, duckdb] = await Promise.all([
      Promise.race([deps.kv.get(["meta", "ready_probe"]).then(() => true, () => false), late]),
      Promise.race([deps.duckdb.ping(), late]),
    ]);
    return { kv, duckdb };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * {@link probeStores} shared by the requests that arrive while one runs: `/readyz` is unthrottled
 * (a balancer must never be refused), and a probe each meant one DuckDB connection each, so 5,000
 * at once held 5,000 connections (+200 MB) and an analytics query waited most of a second. A
 * request that arrives after the probe ended starts a new one, so a store that fails is seen; the
 * probe's deadline keeps one stuck call from holding every later request.
 */
export function sharedStoreProbe(
  deps: Pick<Deps, "kv" | "duckdb">,
  options: { timeoutMs?: number } = {},
): () => Promise<{ kv: boolean; duckdb: boolean }> {
  let running: Promise<{ kv: boolean; duckdb: boolean }> | null = null;
  return () => running ??= probeStores(deps, options).finally(() => running = null);
}

/**
 * `/healthz` and `/readyz`, mounted at `/` (`/openapi.json` is mounted by createApp on the root
 * router; `/docs` is routes/api_reference.ts).
 */
export function createSystemRoutes(
  deps: Pick<Deps, "log">,
  { probe }: { probe: () => Promise<{ kv: boolean; duckdb: boolean }> },
) {
  const app = familyApp("message", deps.log);
  app.openapi(healthRoute, (c) => c.json({ status: "ok" as const }, 200));
  app.openapi(readyRoute, async (c) => {
    const { kv, duckdb } = await probe();
    const ok = kv && duckdb;
    return c.json({ status: ok ? "ok" as const : "unavailable" as const, checks: { kv, duckdb } }, ok ? 200 : 503);
  });
  return app;
}
