/**
 * Recirculation (GET /v1/analytics/articles) and agent readership (GET /v1/analytics/agents): what
 * our search results and tracking links did for the publisher's articles, and which AI agents read
 * them and whether their users click through.
 */
import { analyticsErrors } from "./errors.ts";
import { ArticleRepo } from "../core/search/mod.ts";
import { clampedCount, pct, supplied } from "./filters.ts";
import { windowParams } from "./metrics.ts";
import { type AnalyticsQuery, meta, opt, requestWindow, type RollupDeps } from "./rollups.ts";
import { num } from "./sql_util.ts";

/** Filters these two endpoints echo. */
export const READERSHIP_FILTERS = ["start_date", "end_date", "data_model_id"] as const;
const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 500;

const limitOf = (q: AnalyticsQuery): number => clampedCount(q.limit, "limit", DEFAULT_LIMIT, MAX_LIMIT);

/**
 * Click-through rate in %, impression-based: clicks beyond the impressions cannot be explained by
 * what was shown (old links, links passed around, forged clicks), so at most one click per
 * impression counts and the rate never passes 100 %.
 */
export const clickThroughRate = (clicks: number, impressions: number): number =>
  pct(Math.min(clicks, impressions), impressions);

/** The tenant's data model named by `data_model_id`, or null for all. @throws 400 when not the tenant's. */
async function dataModelOf(deps: RollupDeps, tenantId: string, q: AnalyticsQuery): Promise<string | null> {
  const id = opt(q, "data_model_id");
  if (id === null) return null;
  const dm = await deps.repos.dataModels.get(id);
  if (!dm || dm.tenantId !== tenantId) throw analyticsErrors.data_model_not_found();
  return id;
}

/** GET /v1/analytics/articles. */
export async function topArticles(deps: RollupDeps & { kv: Deno.Kv }, tenantId: string, q: AnalyticsQuery) {
  const store = new ArticleRepo(deps.kv, deps.clock);
  const w = await requestWindow(deps, q);
  const limit = limitOf(q);
  const dataModelId = await dataModelOf(deps, tenantId, q);
  const params = { ...windowParams(w), tenant_id: tenantId, data_model_id: dataModelId, limit };
  const [articleRows, siteRows] = await Promise.all([
    deps.engine.query("articles_top", { ...params, level: "article" }),
    deps.engine.query("articles_top", { ...params, level: "site" }),
  ]);
  // Events are the tenant's own words: a click naming another tenant's article ids must not read
  // that tenant's titles, so only articles of the tenant's own data models are looked up.
  const own = new Set((await deps.repos.dataModels.listByTenant(tenantId)).map((m) => m.id));
  const articles = await Promise.all(articleRows.map(async (r) => {
    const dm = String(r.data_model_id);
    const id = String(r.article_id);
    const stored = own.has(dm) && id ? await store.get(dm, id).catch(() => null) : null;
    const clicks = num(r.clicks);
    const impressions = num(r.impressions);
    return {
      data_model_id: dm,
      article_id: id,
      title: stored?.title ?? "",
      url: String(r.url ?? ""),
      site: String(r.site),
      clicks,
      impressions,
      ctr: clickThroughRate(clicks, impressions),
    };
  }));
  const sites = siteRows.map((r) => {
    const clicks = num(r.clicks);
    const impressions = num(r.impressions);
    return { site: String(r.site), clicks, impressions, ctr: clickThroughRate(clicks, impressions) };
  });
  return { success: true, filters: supplied(q, READERSHIP_FILTERS), articles, sites, meta: meta(deps.clock, w) };
}

/** GET /v1/analytics/agents. */
export async function agentReadership(deps: RollupDeps, tenantId: string, q: AnalyticsQuery) {
  const w = await requestWindow(deps, q);
  const limit = limitOf(q);
  const rows = await deps.engine.query("agents", { ...windowParams(w), tenant_id: tenantId, limit });
  const agents = rows.map((r) => {
    const identity = String(r.agent_identity);
    const surfaced = num(r.results_surfaced);
    const clicks = num(r.clicks);
    const bot = webBotOf(identity);
    return {
      agent_identity: identity,
      channel: identity.includes(":") ? identity.slice(0, identity.indexOf(":")) : identity,
      // Web Bot Auth: verified agents by their key directory's host; a failed signature is counted
      // under `webbot-unverified`, never under the name it claimed.
      verified: bot.verified,
      directory_host: bot.directoryHost,
      searches: num(r.searches),
      answers: num(r.answers),
      queries: num(r.searches) + num(r.answers),
      results_surfaced: surfaced,
      articles_surfaced: num(r.articles_surfaced),
      clicks,
      click_through_rate: clickThroughRate(clicks, surfaced),
    };
  });
  return { success: true, filters: supplied(q, ["start_date", "end_date"]), agents, meta: meta(deps.clock, w) };
}

/** What an agent identity says about Web Bot Auth (see core/web_bot_auth/verifier.ts). */
function webBotOf(identity: string): { verified: boolean; directoryHost: string | null } {
  return identity.startsWith("webbot:")
    ? { verified: true, directoryHost: identity.slice("webbot:".length) }
    : { verified: false, directoryHost: null };
}
