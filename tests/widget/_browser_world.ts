/**
 * A widget world for browser tests: the service over real HTTP on 127.0.0.1 (BASE_URL), the
 * publisher demo site on a second origin the seeded widget allows (DEMO_SITE_URL), a third origin
 * it does not allow, and a log of what the browser sent the service (paths, statuses, event batches).
 */
import type { Page } from "puppeteer-core";
import { openSharedBrowser, serveLocal } from "../_browser.ts";
import { createTestWorld, type TestWorld } from "../_helpers.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedDemoArticles } from "../../fixtures/demo_articles.ts";
import { demoSiteHandler } from "../../fixtures/demo_site.ts";

/** One request the service answered. */
export interface Seen {
  method: string;
  path: string;
  status: number;
  origin: string | null;
}

export interface WidgetWorld extends AsyncDisposable {
  w: TestWorld;
  serviceUrl: string;
  siteUrl: string;
  strangerUrl: string;
  widgetId: string;
  campaignId: string;
  apiKey: string;
  /** Every request the service answered, in order. */
  seen: Seen[];
  /** Every event of every accepted `/v1/events` batch, in arrival order. */
  events: Record<string, unknown>[];
  /** The next `POST /v1/events` gets this answer instead of reaching the service (its body is kept in `refused`). */
  refuseNextEvents(res: () => Response): void;
  /** Events of the batches refused by {@link refuseNextEvents}. */
  refused: Record<string, unknown>[];
  /** While on, the widget script (`/widget/v1/assets/...`) is served with a line added to its built bytes. */
  tamperWidgetScript(on: boolean): void;
  /** Waits (polling the logs above, not the clock) until `ok()` holds. */
  until(what: string, ok: () => boolean, timeoutMs?: number): Promise<void>;
  /** GET an analytics endpoint for the world's day, bypassing the cache. */
  analytics(path: string, query?: Record<string, string>): Promise<Record<string, unknown>>;
}

/**
 * `env`: more settings for the service (an AI provider's address, say). `articles: false` seeds the
 * demo without its articles (0.4 s of CPU), for a test in which the widget answers nothing.
 */
export async function widgetWorld(
  options: { env?: Record<string, string>; articles?: boolean } = {},
): Promise<WidgetWorld> {
  const svc = serveLocal();
  const site = serveLocal();
  const stranger = serveLocal();
  const w = await createTestWorld({ env: { ...options.env, BASE_URL: svc.url, DEMO_SITE_URL: site.url } });
  const seeded = await seedDemo(w.deps, options.articles === false ? [] : [seedDemoArticles]);
  const seen: Seen[] = [];
  const events: Record<string, unknown>[] = [];
  const refused: Record<string, unknown>[] = [];
  let refuseNext: (() => Response) | null = null;
  let tamper = false;
  svc.setHandler(async (req, info) => {
    const url = new URL(req.url);
    const isEvents = req.method === "POST" && url.pathname === "/v1/events";
    const copy = isEvents ? await req.clone().text() : "";
    let res: Response;
    if (isEvents && refuseNext) {
      // A stand-in refusal (the real limits need thousands of events): CORS as the route sends it.
      res = refuseNext();
      refuseNext = null;
      res.headers.set("access-control-allow-origin", req.headers.get("origin") ?? "");
      res.headers.set("access-control-allow-credentials", "true");
      res.headers.set("access-control-expose-headers", "Retry-After");
      refused.push(...(JSON.parse(copy).events as Record<string, unknown>[]));
    } else if (tamper && url.pathname.startsWith("/widget/v1/assets/")) {
      // A copy changed on the way (a compromised CDN or cache): valid script, other bytes.
      const headers = new Headers(req.headers);
      headers.delete("accept-encoding");
      headers.delete("if-none-match");
      const built = await w.app.fetch(new Request(req.url, { headers }), info);
      const out = new Headers(built.headers);
      out.delete("content-length");
      res = new Response(`${await built.text()}\n/* changed */\n`, { status: built.status, headers: out });
    } else res = await w.app.fetch(req, info);
    seen.push({ method: req.method, path: url.pathname, status: res.status, origin: req.headers.get("origin") });
    if (isEvents && res.status === 202) events.push(...(JSON.parse(copy).events as Record<string, unknown>[]));
    return res;
  });
  const opts = { serviceUrl: svc.url, widgetId: seeded.ids.widgetId };
  site.setHandler(demoSiteHandler(opts));
  stranger.setHandler(demoSiteHandler(opts));
  const day = w.clock.now().toISOString().slice(0, 10);
  const close = async () => {
    await Promise.all([svc.close(), site.close(), stranger.close()]);
    await w.close();
  };
  return {
    w,
    serviceUrl: svc.url,
    siteUrl: site.url,
    strangerUrl: stranger.url,
    widgetId: seeded.ids.widgetId,
    campaignId: seeded.ids.campaignId,
    apiKey: seeded.apiKey!,
    seen,
    events,
    refused,
    refuseNextEvents(r) {
      refuseNext = r;
    },
    tamperWidgetScript(on) {
      tamper = on;
    },
    async until(what, ok, timeoutMs = 15_000) {
      const end = performance.now() + timeoutMs;
      while (!ok()) {
        if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async analytics(path, query = {}) {
      const qs = new URLSearchParams({ start_date: day, end_date: day, ...query });
      const res = await w.app.request(`${svc.url}/v1/analytics/${path}?${qs}`, {
        headers: { authorization: `Bearer ${seeded.apiKey}`, "cache-control": "no-cache" },
      });
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return await res.json();
    },
    [Symbol.asyncDispose]: close,
  };
}

export { openSharedBrowser };

/**
 * Runs `act` (a question typed and sent, a follow-up or a prompt picked) and waits for the widget
 * to have answered it: one turn more than before and no longer busy, or an error in its status
 * line (a failed question leaves no turn). Waiting for `[data-busy]` to show first cost a 2 s
 * timeout whenever the answer had come and gone before the wait began.
 */
export async function answerTo(page: Page, act: () => Promise<unknown>): Promise<void> {
  const turns = () =>
    page.$eval("ask-ai-widget", (w) => w.shadowRoot?.querySelectorAll(".turn").length ?? 0) as Promise<number>;
  const before = await turns();
  await act();
  await page.waitForFunction(
    (n: number) => {
      const w = document.querySelector("ask-ai-widget");
      const root = w?.shadowRoot;
      if (!w || !root || w.hasAttribute("data-busy")) return false;
      return root.querySelectorAll(".turn").length > n || root.querySelector(".status[data-error]") !== null;
    },
    {},
    before,
  );
}
