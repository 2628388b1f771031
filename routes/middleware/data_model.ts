import type { MiddlewareHandler } from "hono";
import { dataModelNotFound } from "../../core/errors.ts";
import { hasIdFormat } from "../../core/ids.ts";
import type { Repos } from "../../core/store/mod.ts";
import type { DataModelEnv } from "../env.ts";

/** Where a route names its data model: a path parameter or a query parameter. */
export type DataModelSource = { param: string } | { query: string };

/**
 * Loads the caller's data model named by the request into `c.var.dataModel`, after the API key
 * check (which sets `tenantId`): a well-formed id that names no data model of this tenant (none at
 * all, or another tenant's) is 404 `Data model not found`, never echoing the id. A missing or
 * malformed id passes on untouched, to the route's own validation error (the same id pattern, so
 * every id the route accepts was looked up here).
 */
export function tenantDataModel(
  { repos, from }: { repos: Pick<Repos, "dataModels">; from: DataModelSource },
): MiddlewareHandler<DataModelEnv> {
  const read = "param" in from
    ? (c: Parameters<MiddlewareHandler<DataModelEnv>>[0]) => c.req.param(from.param)
    : (c: Parameters<MiddlewareHandler<DataModelEnv>>[0]) => c.req.query(from.query);
  return async function tenantDataModel(c, next) {
    const id = read(c);
    // Two route groups may guard the same path (the sources routes inside the data-models family).
    if (hasIdFormat("dm", id) && c.get("dataModel")?.id !== id) {
      const dm = await repos.dataModels.getForTenant(c.get("tenantId"), id);
      if (!dm) throw dataModelNotFound();
      c.set("dataModel", dm);
    }
    await next();
  };
}
