import type { QueryCount, QuerySource } from "../core/search/ports.ts";
import type { Repos } from "../core/store/repos.ts";
import type { RollupName, SqlParam } from "./engine.ts";
import { windowParams } from "./metrics.ts";

/** The part of the analytics engine this reads (its rollup runner). */
export interface RollupRunner {
  query(name: RollupName, params: Record<string, SqlParam>): Promise<Record<string, unknown>[]>;
}

const INTERACTIONS = ["free_form", "automated_followup", "search"];
// Per AI model and call: the newest query events are what a 24-hour trend needs.
const ROWS_PER_AGENT = 500;
const MAX_AGENTS = 10;

/**
 * Recent query events from analytics, as trending keywords need them: the Ask AI queries (event
 * `query`) of the data model's tenant, asked of the AI models grounded in that data model, in the
 * window. Read through the `ask_ai_logs` rollup (bound parameters, newest first, at most 500 per
 * AI model), so only flushed events count.
 */
export class AnalyticsQuerySource implements QuerySource {
  constructor(
    private readonly analytics: RollupRunner,
    private readonly repos: Pick<Repos, "dataModels" | "aiModels">,
  ) {}

  async recentQueries(dataModelId: string, since: Date, until: Date): Promise<QueryCount[]> {
    const dm = await this.repos.dataModels.get(dataModelId);
    if (!dm) return [];
    const agents = (await this.repos.aiModels.listByTenant(dm.tenantId))
      .filter((m) => m.groundingDataModelIds.includes(dataModelId)).slice(0, MAX_AGENTS);
    const counts = new Map<string, number>();
    for (const agent of agents) {
      const rows = await this.analytics.query("ask_ai_logs", {
        ...windowParams({
          start: since.toISOString().slice(0, 10),
          end: until.toISOString().slice(0, 10),
          days: [],
          tz: "UTC",
        }),
        tenant_id: dm.tenantId,
        interaction_types: INTERACTIONS,
        ai_agent: agent.id,
        placement_id: null,
        deployment_type: null,
        limit: ROWS_PER_AGENT,
        offset: 0,
      });
      for (const row of rows) {
        const at = Date.parse(String(row.timestamp));
        const prompt = String(row.prompt ?? "").trim().toLowerCase();
        if (!prompt || !(at >= since.getTime() && at <= until.getTime())) continue;
        counts.set(prompt, (counts.get(prompt) ?? 0) + 1);
      }
    }
    return [...counts].map(([query, count]) => ({ query, count }));
  }
}
