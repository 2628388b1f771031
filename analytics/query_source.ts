import type { QueryCount, QuerySource, TrendChannel } from "../core/search/mod.ts";
import type { Repos } from "../core/store/mod.ts";
import type { RollupName, SqlParam } from "./engine.ts";
import { windowParams } from "./metrics.ts";

/** The part of the analytics engine this reads (its rollup runner). */
export interface RollupRunner {
  query(name: RollupName, params: Record<string, SqlParam>): Promise<Record<string, unknown>[]>;
}

const INTERACTIONS = ["free_form", "automated_followup", "search"];
const MAX_AGENTS = 10;
/** Distinct queries (or clicked articles) one sender contributes per channel: its newest. */
export const PER_SENDER = 20;
/** Signal rows read per call: a day of a busy data model, newest first. */
const MAX_SIGNALS = 20_000;
const CHANNELS = new Set<TrendChannel>(["widget", "server", "click"]);

/**
 * Recent trending signals from analytics: the Ask AI queries (event `query`) of the data model's
 * tenant asked of the AI models grounded in that data model, the searches served in it (`api_call`)
 * and the clicks on its articles, in the window. Read through the `trending_signals` rollup (bound parameters), one row per distinct
 * sender, session and text, at most {@link PER_SENDER} per sender, so flooding one prompt (or
 * many) from one sender, session or batch does not multiply it. Only flushed events count.
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
      .filter((m) => m.groundingDataModelIds.includes(dataModelId)).slice(0, MAX_AGENTS).map((m) => m.id);
    const rows = await this.analytics.query("trending_signals", {
      ...windowParams({
        start: since.toISOString().slice(0, 10),
        end: until.toISOString().slice(0, 10),
        days: [],
        tz: "UTC",
      }),
      // The day-aligned window above, narrowed to the exact instants.
      start_ts: sqlInstant(since),
      end_ts: sqlInstant(new Date(until.getTime() + 1)),
      tenant_id: dm.tenantId,
      data_model_id: dataModelId,
      ai_agents: agents,
      interaction_types: INTERACTIONS,
      per_sender: PER_SENDER,
      limit: MAX_SIGNALS,
    });
    const out: QueryCount[] = [];
    for (const row of rows) {
      const channel = String(row.channel) as TrendChannel;
      const text = String(row.text ?? "");
      if (!CHANNELS.has(channel) || !text) continue;
      const sender = String(row.sender), session = String(row.session);
      out.push(
        channel === "click"
          ? { query: "", count: 1, channel, sender, session, articleUrl: text }
          : { query: text, count: 1, channel, sender, session },
      );
    }
    return out;
  }
}

/** A UTC instant as DuckDB's TIMESTAMP text (milliseconds). */
function sqlInstant(d: Date): string {
  return d.toISOString().replace("T", " ").replace("Z", "");
}
