import type { MiddlewareHandler } from "hono";
import type { Deps } from "../../composition.ts";
import { widgetRateLimited } from "../../core/widget/mod.ts";
import type { AppEnv } from "../env.ts";
import { rateLimit } from "../middleware/rate_limit.ts";
import { byClientAddress } from "../middleware/public_limits.ts";

/**
 * The rate limits of a public widget route: per client address (over every widget; an IPv6 address
 * as its /64, like `/v1/events`), then, when `perWidget`, per widget (over every address). Runs
 * after the origin check, so a refused origin is never counted. Over a limit: 429 `rate_limited` with `Retry-After`.
 */
export function widgetRateLimits(
  deps: Pick<Deps, "widgetLimits" | "config">,
  { perWidget }: { perWidget: boolean },
): MiddlewareHandler<AppEnv>[] {
  const byAddress = rateLimit({
    limiter: deps.widgetLimits.perAddress,
    key: byClientAddress(deps.config.trustProxy),
    onLimited: widgetRateLimited,
    policy: "widget-address",
  });
  if (!perWidget) return [byAddress];
  const byWidget = rateLimit({
    limiter: deps.widgetLimits.perWidget,
    key: (c) => c.get("widget")?.id,
    onLimited: widgetRateLimited,
    policy: "widget",
  });
  return [byAddress, byWidget];
}
