/**
 * The analytics API's answers as far as the dashboard reads them (the full shapes are in the
 * OpenAPI document and docs/api/analytics.md).
 */

/** The view's headline figures (GET /v1/analytics/ask-ai `summary`). */
export interface Summary {
  sessions: number;
  widget_loads: number;
  engagement_queries: number;
  total_clicks: number;
  viewability_rate: number;
  engagement_rate: number;
  query_to_click_rate: number;
  avg_session_duration_seconds: number;
}

/** One day of the daily breakdown. */
export interface DayFigures {
  date: string;
  sessions: number;
  engagement_queries: number;
}

/** The earlier period a view is compared with: its range, days and the change of each figure (null: none before). */
export interface Comparison {
  compare: string;
  start_date: string;
  end_date: string;
  change: Partial<Record<keyof Summary, number | null>>;
  daily_breakdown: DayFigures[];
}

/** The "ask-ai" and "today" panels: figures of a range. */
export interface AskAi {
  summary: Summary;
  daily_breakdown: DayFigures[];
  filters: { start_date: string; end_date: string };
  meta: { timezone: string; generated_at?: string };
  comparison?: Comparison | null;
}

/** Figures of the last minutes. */
export interface RealtimeWindow {
  active_sessions: number;
  queries: number;
  clicks: number;
}

/** The "realtime" panel (GET /v1/analytics/realtime). */
export interface Realtime {
  last_5_minutes: RealtimeWindow;
  last_30_minutes: RealtimeWindow;
}

/** One row of a breakdown: a placement, deployment type or page (`key` null or empty: API traffic). */
export interface BreakdownRow {
  key: string | null;
  sessions: number;
  engagement_queries: number;
  total_clicks: number;
  widget_loads: number;
  engagement_rate: number;
}

/** The "by-*" panels. */
export interface Breakdown {
  breakdown: { dimension: string };
  rows: BreakdownRow[];
}

export interface ArticleRow {
  title?: string | null;
  url: string;
  clicks: number;
  impressions: number;
  ctr: number;
}

export interface SiteRow {
  site?: string | null;
  clicks: number;
  impressions: number;
  ctr: number;
}

/** The "articles" panel. */
export interface Articles {
  articles: ArticleRow[];
  sites: SiteRow[];
}

export interface AgentRow {
  agent_identity: string;
  searches: number;
  answers: number;
  results_surfaced: number;
  articles_surfaced: number;
  clicks: number;
  click_through_rate: number;
}

/** The "agents" panel. */
export interface Agents {
  agents: AgentRow[];
}

/** A share of sessions: by query depth or by intent. */
export interface SessionShare {
  sessions: number;
  percentage: number;
}

/** The "session-intelligence" panel. */
export interface SessionIntelligence {
  session_intelligence: {
    session_engagement_distribution: (SessionShare & { query_depth: string })[];
    intent_breakdown: (SessionShare & { label: string })[];
  };
}

export interface LogRow {
  timestamp: string;
  prompt: string;
  response: string;
  interaction_type: string;
}

/** The "logs" panel. */
export interface Logs {
  data: LogRow[];
  meta?: { timezone?: string };
}

/** One line of GET /v1/analytics/dashboard: a panel's status and body, as if called on its own. */
export interface PanelLine {
  panel: string;
  status: number;
  body: unknown;
}

/** GET /v1/widgets. */
export interface WidgetList {
  data?: { id: unknown; name?: unknown }[];
}
