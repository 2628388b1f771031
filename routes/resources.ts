import { createRoute, z } from "@hono/zod-openapi";
import type { Deps } from "../core/deps.ts";
import { apiKeyAuth } from "./middleware/api_key.ts";
import { createRouter } from "./validation.ts";

const bearer = [{ bearerAuth: [] }];
const listOf = (name: string) => ({
  200: {
    description: `The tenant's ${name}`,
    content: { "application/json": { schema: z.object({ data: z.array(z.record(z.string(), z.unknown())) }) } },
  },
  401: { description: "Missing or malformed API key" },
  403: { description: "Unknown or revoked API key" },
});

/**
 * Read-only views of the caller's own configuration (data models, AI models, widgets,
 * campaigns, prompts), so an API key holder can discover the ids the other routes take.
 */
export function createResourceRoutes(deps: Pick<Deps, "apiKeys" | "repos">) {
  const app = createRouter();
  app.use("/v1/*", apiKeyAuth(deps.apiKeys));
  const kinds = [
    ["data-models", deps.repos.dataModels],
    ["ai-models", deps.repos.aiModels],
    ["widgets", deps.repos.widgets],
    ["campaigns", deps.repos.campaigns],
    ["prompts", deps.repos.prompts],
  ] as const;
  for (const [path, repo] of kinds) {
    const route = createRoute({
      method: "get",
      path: `/v1/${path}`,
      tags: ["configuration"],
      summary: `List the tenant's ${path.replace("-", " ")}`,
      security: bearer,
      responses: listOf(path.replace("-", " ")),
    });
    app.openapi(route, async (c) => {
      const data = await repo.listByTenant(c.get("tenantId")!);
      return c.json({ data: data as unknown as Record<string, unknown>[] }, 200);
    });
  }
  return app;
}
