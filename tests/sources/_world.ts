import { inlineExtractor } from "../../core/extract/extractor.ts";
import { addressPolicy } from "../../core/net/ip.ts";
import { SafeFetcher } from "../../core/net/safe_fetch.ts";
import { type PollerDeps, type PollerSettings, SourcePoller } from "../../core/sources/poller.ts";
import { SourceRepo } from "../../core/sources/source.ts";
import { inlineSourceParser } from "../../core/sources/parser.ts";
import { bearer } from "../_helpers.ts";
import { searchWorld } from "../search/_world.ts";

const publicOnly = addressPolicy({ allowPrivate: false });

export const SETTINGS: PollerSettings = {
  tickMs: 1000,
  leaseMs: 30_000,
  maxItems: 50,
  maxBytes: 1024 * 1024,
  maxPageBytes: 1024 * 1024,
  timeoutMs: 5000,
  maxPageFetches: 5,
  maxBackoffS: 3600,
  maxChildSitemaps: 3,
};

/** A search world whose user URLs may reach 127.0.0.1 (tests only), plus poller and route helpers. */
export async function sourcesWorld(env: Record<string, string> = {}) {
  const w = await searchWorld({ env: { ALLOW_PRIVATE_URLS: "true", ...env } });
  const repo = new SourceRepo(w.deps.kv, w.clock);
  const pollers: SourcePoller[] = [];
  /** A poller over the world's KV and engine, as another process would run it. */
  const poller = (over: Partial<PollerDeps> = {}, settings: Partial<PollerSettings> = {}) => {
    const p = new SourcePoller({
      kv: w.deps.kv,
      clock: w.clock,
      log: w.log,
      sources: repo,
      dataModel: (id) => w.deps.repos.dataModels.get(id),
      articleByUrl: (dm, url) => w.deps.search.articleByUrl(dm, url),
      ingest: (dm, items) => w.deps.search.ingest(dm, items),
      fetcher: w.deps.safeFetch,
      extractor: inlineExtractor,
      parser: inlineSourceParser,
      random: () => 0.5,
      ...over,
    }, { ...SETTINGS, ...settings });
    pollers.push(p);
    return p;
  };
  const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
    w.app.request(`/v1/data-models/${w.dm.id}${path}`, {
      method: init.method ?? "GET",
      headers: { ...bearer(w.key), ...(init.body !== undefined ? { "content-type": "application/json" } : {}) },
      body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    });
  const addSource = async (body: Record<string, unknown>) => {
    const res = await api("/sources", { method: "POST", body: { interval_s: 300, ...body } });
    return { status: res.status, json: await res.json() };
  };
  const closeWorld = w.close;
  const close = async () => {
    for (const p of pollers) await p.stop();
    await closeWorld();
  };
  return Object.assign(w, {
    repo,
    poller,
    api,
    addSource,
    close,
    [Symbol.asyncDispose]: close,
    /** A fetcher that refuses private addresses except 127.0.0.1 (the feed server), like production would. */
    strictFetcher: () =>
      new SafeFetcher({
        policy: (ip) => (ip === "127.0.0.1" ? null : publicOnly(ip)),
      }),
  });
}
