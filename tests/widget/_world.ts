/**
 * A test world for the public widget routes: two tenants, each with data models holding the
 * hand-made articles (through the real search engine's ingestion), an extractive AI model and a
 * widget whose allowed origin is {@link ORIGIN}; plus a recording event sink check helper.
 */
import assert from "node:assert/strict";
import { newId } from "../../core/ids.ts";
import type { AiModel, Widget } from "../../core/store/models.ts";
import { createTestWorld } from "../_helpers.ts";
import { fixtureArticles, ingestItem } from "../answer/_articles.ts";

/** The publisher page origin the widgets allow. */
export const ORIGIN = "https://dailyledger.example";
/** An origin no widget allows. */
export const OTHER_ORIGIN = "https://evil.example";

/** Builds the world; `env` adds configuration (limits), `fetch` replaces its outbound fetch. Always `await using`. */
export async function widgetWorld(
  { env = {}, fetch, wrapKv }: {
    env?: Record<string, string>;
    fetch?: typeof globalThis.fetch;
    /** Stands in front of the world's KV (as in createTestWorld). */
    wrapKv?: (kv: Deno.Kv) => Deno.Kv;
  } = {},
) {
  const w = await createTestWorld({ env, fetch, wrapKv });
  const now = w.clock.now().toISOString();

  /** One tenant with two data models, an AI model over both, and a widget. */
  const tenant = async (name: string, widgetFields: Partial<Widget> = {}) => {
    const { tenantId, key } = await w.tenantWithKey(name);
    const dmNews = newId("dm", w.clock);
    const dmTech = newId("dm", w.clock);
    const byModel = new Map<string, ReturnType<typeof fixtureArticles>>();
    for (const a of fixtureArticles(dmNews, dmTech)) {
      // Each tenant's copies live at its own URLs, so a leak would show in the links.
      const own = { ...a, url: a.url.replace("/news/", `/${name.toLowerCase().replace(/\W+/g, "-")}/`) };
      byModel.set(a.dataModelId, [...byModel.get(a.dataModelId) ?? [], own]);
    }
    for (const id of [dmNews, dmTech]) {
      const dm = await w.deps.repos.dataModels.create({
        id,
        tenantId,
        name: `${name} ${id === dmNews ? "News" : "Tech"}`,
        sites: [],
        marketplace: false,
        createdAt: now,
      });
      const report = await w.deps.search.ingest(dm, byModel.get(id)!.map(ingestItem));
      assert.equal(report.failed, 0, JSON.stringify(report.results));
    }
    const model: AiModel = {
      id: newId("am", w.clock),
      tenantId,
      name: `${name} Assistant`,
      groundingDataModelIds: [dmNews, dmTech],
      provider: { kind: "extractive" },
      output: { kind: "text" },
      private: false,
      marketplace: false,
      createdAt: now,
    };
    await w.deps.repos.aiModels.create(model);
    const widget: Widget = {
      id: newId("wd", w.clock),
      tenantId,
      name: `${name} Ask AI`,
      aiModelId: model.id,
      allowedOrigins: [ORIGIN],
      deploymentType: "embed",
      createdAt: now,
      ...widgetFields,
    };
    await w.deps.repos.widgets.create(widget);
    return { tenantId, key, dmNews, dmTech, model, widget, articles: [...byModel.values()].flat() };
  };

  /** A request to a widget route from `origin` (default: the allowed one). */
  const call = (
    path: string,
    { origin = ORIGIN, body, headers = {}, method }: {
      origin?: string | null;
      body?: unknown;
      headers?: Record<string, string>;
      method?: string;
    } = {},
  ) =>
    w.app.request(`/widget/v1${path}`, {
      method: method ?? (body === undefined ? "GET" : "POST"),
      headers: {
        ...(origin ? { origin } : {}),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });

  return Object.assign(w, { tenant, call });
}

/** The events of an SSE body, in order. */
export function sseEvents(text: string): { event: string; data: unknown }[] {
  return text.split("\n\n").filter((b) => b.trim()).map((block) => {
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    }
    return { event, data: JSON.parse(data.join("\n")) };
  });
}
