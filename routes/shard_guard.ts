/**
 * The edge check of search shards (docs/operations.md, "Search shards"): a request naming a data
 * model (`/v1/data-models/{id}/...`, else the `data_model_id` query parameter) that this process's
 * `SEARCH_SHARD` does not serve is answered 421 with a JSON body before any route runs, so no route
 * answers from an index this process does not hold. Behind HAProxy, which retries 503 but not 421,
 * the balancer sends `X-Shard-Retry: 1` and gets the same body as 503 to retry on another server.
 * Ids that are not well-formed pass on, to the route's own validation error.
 */
import type { MiddlewareHandler } from "hono";
import {
  outsideShard,
  publicLabel,
  requestedDataModel,
  type SearchShard,
  serves,
  SHARD_RETRY_HEADER,
} from "../core/search/mod.ts";
import { httpStatus } from "./error_status.ts";
import type { AppEnv } from "./env.ts";

const DM_ID = /^dm_[A-Za-z0-9]{1,64}$/;

/** The middleware; a no-op when the process serves every data model. */
export function shardGuard(shard: SearchShard | null): MiddlewareHandler<AppEnv> {
  return async function shardGuard(c, next) {
    if (shard) {
      const dm = requestedDataModel(new URL(c.req.url));
      if (dm && DM_ID.test(dm) && !serves(shard, dm)) {
        return outsideShardResponse(shard, c.req.header(SHARD_RETRY_HEADER) === "1");
      }
    }
    await next();
    return undefined;
  };
}

/** The {@link outsideShard} response, for the edge check that runs before any route. */
export function outsideShardResponse(shard: SearchShard, asRetryable: boolean): Response {
  const err = outsideShard(shard, asRetryable);
  return Response.json({ error: "misdirected_request", message: err.message, shard: publicLabel(shard) }, {
    status: httpStatus(err),
    headers: { ...err.headers, ...(asRetryable ? { "retry-after": "0" } : {}) },
  });
}
