import { writeRowsAsParquet } from "../../analytics/parquet_writer.ts";
import type { EventRow } from "../../analytics/schema.ts";
import { uuidv7 } from "../../analytics/uuid7.ts";
import { generateDay } from "../../fixtures/events.ts";
import { createTestWorld } from "../_helpers.ts";

/**
 * A small hand-made event set for the expectations in the endpoint tests (the clock stands at
 * 2026-11-22T12:00:00Z, so the default window is 2026-11-16 .. 2026-11-22). See
 * endpoints_test.ts for the numbers each endpoint must give.
 */
export async function analyticsWorld(env: Record<string, string> = {}) {
  const w = await createTestWorld({ env });
  const { tenantId, key, keyId } = await w.tenantWithKey("Publisher");
  const other = await w.tenantWithKey("Other");
  const now = w.clock.now().toISOString();
  const r = w.deps.repos;
  await r.aiModels.create({
    id: "am_main",
    tenantId,
    name: "Main agent",
    groundingDataModelIds: [],
    provider: { kind: "extractive" },
    output: { kind: "text" },
    private: false,
    marketplace: true,
    createdAt: now,
  });
  await r.aiModels.create({
    id: "am_second",
    tenantId,
    name: "Second agent",
    groundingDataModelIds: [],
    provider: { kind: "extractive" },
    output: { kind: "text" },
    private: false,
    marketplace: false,
    createdAt: now,
  });
  await r.aiModels.create({
    id: "am_other",
    tenantId: other.tenantId,
    name: "Other agent",
    groundingDataModelIds: [],
    provider: { kind: "extractive" },
    output: { kind: "text" },
    private: false,
    marketplace: false,
    createdAt: now,
  });
  await r.widgets.create({
    id: "wd_main",
    tenantId,
    name: "Main widget",
    aiModelId: "am_main",
    allowedOrigins: ["https://news.example"],
    deploymentType: "embed",
    createdAt: now,
  });
  await r.widgets.create({
    id: "wd_second",
    tenantId,
    name: "Second widget",
    aiModelId: "am_second",
    allowedOrigins: ["https://news.example"],
    deploymentType: "brand_agent",
    createdAt: now,
  });
  await r.widgets.create({
    id: "wd_other",
    tenantId: other.tenantId,
    name: "Other widget",
    aiModelId: "am_other",
    allowedOrigins: ["https://other.example"],
    deploymentType: "embed",
    createdAt: now,
  });
  await r.campaigns.create({
    id: "cp_spring",
    tenantId,
    name: "Spring Travel",
    creativeIds: ["cr_1001", "cr_1002"],
    aiModelId: "am_main",
    createdAt: now,
  });
  await r.campaigns.create({
    id: "cp_other",
    tenantId: other.tenantId,
    name: "Other campaign",
    creativeIds: ["cr_9"],
    createdAt: now,
  });
  return { w, tenantId, key, keyId, other, [Symbol.asyncDispose]: () => w.close() };
}

const T1 = "Where should I travel this spring?";
const T2 = "What are the best budget airlines?";

/** The hand-made events (widget traffic of wd_main unless stated). */
export function fixtureEvents(): Record<string, unknown>[] {
  const a = (ts: string, e: Record<string, unknown>) => ({ session_id: "s_a", placement_id: "pl_1", ts, ...e });
  const b = (ts: string, e: Record<string, unknown>) => ({ session_id: "s_b", placement_id: "pl_1", ts, ...e });
  const c = (ts: string, e: Record<string, unknown>) => ({ session_id: "s_c", placement_id: "pl_2", ts, ...e });
  const d = (ts: string, e: Record<string, unknown>) => ({ session_id: "s_d", placement_id: "pl_1", ts, ...e });
  const hb = { event_type: "heartbeat" };
  return [
    // 2026-11-20, session A: viewable, 2 queries, 3 heartbeats, an article and a CTA click.
    a("2026-11-20T10:00:00Z", { event_type: "widget_load", referring_url: "https://news.example/a" }),
    a("2026-11-20T10:00:02Z", { event_type: "widget_viewable", in_view_pct: 60, in_view_ms: 1500 }),
    a("2026-11-20T10:00:10Z", {
      event_type: "query",
      interaction_type: "free_form",
      prompt: T1,
      response: "Try Lisbon.",
      referring_url: "https://news.example/a",
    }),
    a("2026-11-20T10:00:15Z", hb),
    a("2026-11-20T10:00:20Z", hb),
    a("2026-11-20T10:00:25Z", { event_type: "click", click_type: "article" }),
    a("2026-11-20T10:01:00Z", { event_type: "query", interaction_type: "automated_followup", prompt: T2 }),
    a("2026-11-20T10:01:05Z", hb),
    a("2026-11-20T10:01:10Z", { event_type: "click", click_type: "cta" }),
    // Session B: in view below the MRC threshold, no query.
    b("2026-11-20T11:00:00Z", { event_type: "widget_load" }),
    b("2026-11-20T11:00:01Z", { event_type: "widget_viewable", in_view_pct: 40, in_view_ms: 3000 }),
    b("2026-11-20T11:00:05Z", hb),
    // Session A again after 31 min idle: a new session (no viewable event).
    a("2026-11-20T10:32:11Z", { event_type: "widget_load" }),
    a("2026-11-20T10:32:20Z", {
      event_type: "query",
      interaction_type: "search",
      prompt: "Who won the football match last night?",
    }),
    a("2026-11-20T10:32:25Z", hb),
    // 2026-11-21, session C: viewable exactly at the threshold, 3 queries, 4 heartbeats.
    c("2026-11-21T09:00:00Z", { event_type: "widget_load" }),
    c("2026-11-21T09:00:01Z", { event_type: "widget_viewable", in_view_pct: 50, in_view_ms: 1000 }),
    c("2026-11-21T09:00:05Z", {
      event_type: "query",
      interaction_type: "free_form",
      prompt: "How is inflation affecting mortgage rates?",
    }),
    c("2026-11-21T09:00:10Z", hb),
    c("2026-11-21T09:00:15Z", {
      event_type: "query",
      interaction_type: "free_form",
      prompt: "Compare electric cars vs hybrids",
    }),
    c("2026-11-21T09:00:20Z", hb),
    c("2026-11-21T09:00:25Z", {
      event_type: "query",
      interaction_type: "free_form",
      prompt: "Latest news on the AI chip shortage",
    }),
    c("2026-11-21T09:00:30Z", hb),
    c("2026-11-21T09:00:35Z", hb),
    // 2026-11-22, session D: a sponsored conversation. The load carries publisher macros; from the
    // impression on, the ad-render ids are frozen whatever the page sends.
    d("2026-11-22T08:00:00Z", {
      event_type: "widget_load",
      creative_id: "pub_cr_9",
      line_item_id: "pub_li",
      publisher_id: "pub_macro",
    }),
    d("2026-11-22T08:00:01Z", { event_type: "widget_viewable", in_view_pct: 80, in_view_ms: 2000 }),
    d("2026-11-22T08:00:02Z", {
      event_type: "sponsored_impression",
      campaign_id: "cp_spring",
      creative_id: "cr_1001",
      line_item_id: "li_7",
      publisher_id: "pub_42",
      ad_partner: "partner_a",
    }),
    d("2026-11-22T08:00:02Z", {
      event_type: "prompt_impression",
      campaign_id: "cp_spring",
      prompt_id: "pm_1",
      prompt_text: T1,
    }),
    d("2026-11-22T08:00:02Z", {
      event_type: "prompt_impression",
      campaign_id: "cp_spring",
      prompt_id: "pm_2",
      prompt_text: T2,
    }),
    d("2026-11-22T08:00:10Z", {
      event_type: "query",
      interaction_type: "sponsored_prompt",
      prompt: T1,
      prompt_id: "pm_1",
      prompt_text: T1,
      creative_id: "pub_cr_9",
      publisher_id: "pub_macro",
    }),
    d("2026-11-22T08:00:15Z", hb),
    d("2026-11-22T08:00:20Z", {
      event_type: "query",
      interaction_type: "free_form",
      prompt: "Is it cheap to fly to Lisbon?",
    }),
    d("2026-11-22T08:00:25Z", { event_type: "click", click_type: "cta" }),
    d("2026-11-22T08:00:30Z", { event_type: "click", click_type: "article" }),
    d("2026-11-22T08:00:35Z", hb),
  ];
}

/** Loads the fixture: widget traffic, one server-side query without a session, one event of another widget. */
export async function loadFixture(world: Awaited<ReturnType<typeof analyticsWorld>>) {
  const { w, tenantId } = world;
  const widget = (await w.deps.repos.widgets.get("wd_main"))!;
  await w.deps.events.ingest(fixtureEvents(), { source: "widget", widget });
  // A payproxy-style server query (no session) on 2026-11-21, through the EventSink contract.
  await w.deps.events.record([{
    event_type: "query",
    ts: "2026-11-21T12:00:00Z",
    ai_agent: "am_main",
    interaction_type: "search",
    prompt: "Best laptop for students",
    response: "The X1.",
    agent_identity: "payproxy:bot-1",
  }]);
  // Another widget of the same tenant (excluded by widget_id=wd_main) and another tenant's widget.
  const second = (await w.deps.repos.widgets.get("wd_second"))!;
  await w.deps.events.ingest([{ event_type: "widget_load", session_id: "s_x", ts: "2026-11-21T10:00:00Z" }], {
    source: "widget",
    widget: second,
  });
  const otherWidget = (await w.deps.repos.widgets.get("wd_other"))!;
  await w.deps.events.ingest([{ event_type: "widget_load", session_id: "s_o", ts: "2026-11-21T10:00:00Z" }], {
    source: "widget",
    widget: otherWidget,
  });
  await w.deps.events.flush();
  return tenantId;
}

/**
 * Writes generated traffic of the tenant's two widgets, one Parquet file for the days `from` ..
 * `to` (UTC), day i generated with seed `seed + i`; with `keep`, only the rows it keeps (a test
 * that reads one kind of event need not write the others).
 */
export async function loadGeneratedDays(
  world: Awaited<ReturnType<typeof analyticsWorld>>,
  { from, to, events, seed, keep }: {
    from: string;
    to: string;
    events: number;
    seed: number;
    keep?: (row: EventRow) => boolean;
  },
): Promise<void> {
  const { deps } = world.w;
  const scope = {
    tenantId: world.tenantId,
    widgets: [
      { id: "wd_main", aiModelId: "am_main", deploymentType: "embed", origin: "https://news.example" },
      { id: "wd_second", aiModelId: "am_second", deploymentType: "brand_agent", origin: "https://news.example" },
    ],
    campaigns: [{ id: "cp_spring", creativeIds: ["cr_1001"], prompts: [{ id: "pm_1", text: "Where to travel?" }] }],
  };
  const rows = [];
  for (let d = Date.parse(from), i = 0; d <= Date.parse(to); d += 86_400_000, i++) {
    const day = generateDay({ scope, date: new Date(d).toISOString().slice(0, 10), events, seed: seed + i });
    rows.push(...(keep ? day.filter(keep) : day));
  }
  await writeRowsAsParquet(deps.duckdb, deps.analytics.eventsDir, uuidv7(deps.clock), rows);
}

/**
 * A small CSV parser (quoted fields, doubled quotes, newlines inside quotes; a quote opens a quoted
 * stretch anywhere in a cell, and a last line without its newline is left out). It copies the text
 * between the characters that matter rather than one character at a time: the exports' tests read
 * megabytes of it.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  const special = /[,\n"]/g;
  let i = 0;
  while (i < text.length) {
    special.lastIndex = i;
    const at = special.exec(text)?.index ?? text.length;
    cell += text.slice(i, at);
    if (at === text.length) break;
    const ch = text[at];
    i = at + 1;
    if (ch === ",") (row.push(cell), cell = "");
    else if (ch === "\n") (row.push(cell), rows.push(row), row = [], cell = "");
    else {
      // Quoted: up to the quote that is not doubled (or the end of the text).
      for (;;) {
        const q = text.indexOf('"', i);
        if (q === -1) {
          cell += text.slice(i);
          i = text.length;
          break;
        }
        cell += text.slice(i, q);
        i = q + 1;
        if (text[i] !== '"') break;
        cell += '"';
        i++;
      }
    }
  }
  return rows;
}

/** A world from {@link analyticsWorld}, with the API key of the caller that asked for it. */
export type AnalyticsWorld = Awaited<ReturnType<typeof analyticsWorld>>;

/**
 * One loaded {@link analyticsWorld} for the tests of a file that only read it: `load` runs once, at
 * the first call. Each call returns it with an API key of its own, because the analytics rate limit
 * counts per key. The world outlives the test that opened it, so the tests that share it leave the
 * sanitizers off and the last of them closes it; run alone (`--filter`), the last may not run, so
 * its temp folder is removed at exit all the same.
 */
export function sharedAnalyticsWorld(load: (world: AnalyticsWorld) => Promise<void>): () => Promise<AnalyticsWorld> {
  let shared: Promise<AnalyticsWorld> | undefined;
  return async () => {
    shared ??= analyticsWorld().then(async (world) => {
      globalThis.addEventListener("unload", () => {
        try {
          Deno.removeSync(world.w.dataDir, { recursive: true });
        } catch { /* closed and removed already */ }
      });
      await load(world);
      return world;
    });
    const world = await shared;
    const { key } = await world.w.deps.apiKeys.create(world.tenantId, "test");
    return { ...world, key };
  };
}
