import type { Deps } from "../../composition.ts";
import type { RollupDeps } from "../../analytics/rollups.ts";

/**
 * The rollups' sources from the app's deps: the engine, the repos, the clock, the compare memo and
 * closed days' visit figures. Every analytics route (endpoints, insights, the dashboard's panels)
 * reads through the same ones, so a panel costs what its own endpoint does.
 */
export function rollupDepsOf(
  deps: Pick<Deps, "analytics" | "analyticsMemo" | "analyticsVisits" | "repos" | "clock">,
): RollupDeps {
  return {
    engine: deps.analytics,
    repos: deps.repos,
    clock: deps.clock,
    memo: deps.analyticsMemo,
    visits: deps.analyticsVisits,
  };
}
