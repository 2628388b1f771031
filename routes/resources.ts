import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Deps } from "../composition.ts";
import type { TenantEnv } from "./env.ts";
import { familyApp } from "./family.ts";
import { apiKeyAuth } from "./middleware/api_key.ts";
import { serveWidgetResource } from "./widget/resource.ts";

const bearer = [{ bearerAuth: [] }];
// One schema for every list, built at import rather than per app (each test world builds one).
const listBody = z.object({ data: z.array(z.record(z.string(), z.unknown())) });
const listOf = (name: string) => ({
  200: {
    description: `The tenant's ${name}`,
    content: { "application/json": { schema: listBody } },
  },
  401: { description: "Missing or malformed API key" },
  403: { description: "Unknown or revoked API key" },
});

/** A repository of one tenant-owned resource kind. */
interface TenantList {
  listByTenant(tenantId: string): Promise<unknown[]>;
}

/**
 * Serves `GET <path>` on `app`: the caller's own `kind` (e.g. `ai-models`), so an API key holder
 * can discover the ids the other routes take. The API key is checked by the app's middleware.
 */
export function serveTenantList<E extends TenantEnv>(
  app: OpenAPIHono<E>,
  path: string,
  kind: string,
  repo: TenantList,
): void {
  const route = createRoute({
    method: "get",
    path,
    tags: ["configuration"],
    summary: `List the tenant's ${kind.replace("-", " ")}`,
    security: bearer,
    responses: listOf(kind.replace("-", " ")),
  });
  app.openapi(route, async (c) => {
    const data = await repo.listByTenant(c.get("tenantId"));
    return c.json({ data: data as unknown as Record<string, unknown>[] }, 200);
  });
}

/**
 * Mounted at `/v1`, after the `/v1` families that have files of their own (analytics, events,
 * data models): read-only views of the caller's AI models, widgets, campaigns and prompts, and
 * the widgets' configuration (create, read one, change). Every
 * other `/v1` path asks for an API key before it answers 404.
 */
export function createResourceRoutes(deps: Pick<Deps, "apiKeys" | "repos" | "log" | "clock" | "config">) {
  const app = familyApp<TenantEnv>("message", deps.log);
  app.use("*", apiKeyAuth(deps.apiKeys));
  // Widgets are also written here: their configuration (routes/widget/resource.ts).
  serveWidgetResource(app, deps);
  const kinds = [
    ["ai-models", deps.repos.aiModels],
    ["widgets", deps.repos.widgets],
    ["campaigns", deps.repos.campaigns],
    ["prompts", deps.repos.prompts],
  ] as const;
  for (const [kind, repo] of kinds) serveTenantList(app, `/${kind}`, kind, repo);
  return app;
}
