import assert from "node:assert/strict";
import { seedDemo } from "../../fixtures/demo.ts";
import { demoEventsOf } from "../../fixtures/demo_events.ts";
import { seedDemoArticles } from "../../fixtures/demo_articles.ts";
import type { HTTPRequest, Page } from "puppeteer-core";
import { openBrowser, serveLocal } from "../_browser.ts";
import { pageFaults } from "../_axe.ts";
import { createTestWorld } from "../_helpers.ts";

/** The calendar date (`YYYY-MM-DD`) of an instant in a zone. */
const dayIn = (zone: string, instant: Date) =>
  new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" })
    .format(instant);
const addDays = (day: string, n: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

/** What the filter form's fields show, by name. */
function viewFields(page: Page): Promise<Record<string, string>> {
  return page.$$eval("#filters [name]", (els) =>
    Object.fromEntries(els.map((e) => {
      const f = e as HTMLInputElement | HTMLSelectElement;
      return [f.name, f.value];
    })));
}

/** The view parameters in the page's URL. */
const urlView = (page: Page) => Object.fromEntries(new URL(page.url()).searchParams);

const XSS_PROMPT = `<img src=x onerror="window.__xss='prompt'">`;
const XSS_RESPONSE = `<script>window.__xss='response'</script><b>bold</b>`;
/** User text with no place to break: it must wrap inside its cell, not widen the table. */
const LONG_PROMPT = `tell me ${"a".repeat(180)}`;
const LONG_PAGE = `https://dailyledger.example/${"very-long-path-segment/".repeat(8)}end`;

/** Tables and bar labels wider than their box, by panel (what a reader would have to scroll or could not see). */
function overflowing(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    for (const box of document.querySelectorAll(".scroll, .bar > span:first-child")) {
      if (box.scrollWidth > box.clientWidth + 1) {
        out.push(`${box.closest("[id]")?.id}: ${box.scrollWidth} > ${box.clientWidth}`);
      }
    }
    return out;
  });
}

/** The computed text colour of an element. */
const colourOf = (page: Page, selector: string) => page.$eval(selector, (e) => getComputedStyle(e).color);
/** --bad in dashboard.css. */
const BAD_RED = "rgb(180, 35, 24)";

const DAY_MS = 86_400_000;

/**
 * The demo's events over 16 days at a third of its volume: the default view (the last 7 whole
 * days), the 7 before it that it is compared with, and today, with every panel filled. Each view
 * the page loads costs a quarter less to compute than over the 30-day demo.
 */
const DASHBOARD_EVENTS = demoEventsOf({ days: 16, eventsPerDay: 200 });

async function dashboardWorld() {
  const w = await createTestWorld();
  const seeded = await seedDemo(w.deps, [seedDemoArticles, DASHBOARD_EVENTS]);
  const key = seeded.apiKey!;
  const tenantId = (await w.deps.apiKeys.authenticate(`Bearer ${key}`)).tenantId;
  const agent = (await w.deps.repos.aiModels.listByTenant(tenantId))[0]!;
  await w.deps.events.record([{
    event_type: "query",
    // The last seconds of yesterday: the newest of the default view, which is of whole days.
    ts: new Date(Math.floor(w.clock.now().getTime() / DAY_MS) * DAY_MS - 1_000).toISOString(),
    ai_agent: agent.id,
    interaction_type: "free_form",
    prompt: XSS_PROMPT,
    response: XSS_RESPONSE,
  }, {
    event_type: "query",
    ts: new Date(Math.floor(w.clock.now().getTime() / DAY_MS) * DAY_MS - 2_000).toISOString(),
    ai_agent: agent.id,
    session_id: "long-text",
    interaction_type: "free_form",
    prompt: LONG_PROMPT,
    response: "A short answer.",
    referring_url: LONG_PAGE,
  }]);
  await w.deps.events.flush();
  return { w, key, widgetId: seeded.ids.widgetId };
}

Deno.test("GET /dashboard in headless Chromium: signs in, draws the demo data, shows user text as text", async (t) => {
  const { w, key, widgetId } = await dashboardWorld();
  await using server = serveLocal();
  server.setHandler(w.app.fetch);
  const origin = server.url;
  try {
    await using session = await openBrowser("dashboard");
    const { browser, page } = session;
    {
      await page.setViewport({ width: 1280, height: 1800 });
      const urls: string[] = [];
      // Where the key went other than the Authorization header (a URL or any other header).
      const keyElsewhere: string[] = [];
      page.on("request", (r) => {
        urls.push(r.url());
        for (const [name, value] of Object.entries(r.headers())) {
          if (name !== "authorization" && value.includes(key)) keyElsewhere.push(`${name} of ${r.url()}`);
        }
      });
      // Script errors, and console errors other than the browser's own line for an HTTP error status.
      const scriptErrors: string[] = [];
      page.on("pageerror", (e) => scriptErrors.push(String(e)));
      page.on("console", (m) => {
        if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) scriptErrors.push(m.text());
      });
      const dialogs: string[] = [];
      page.on("dialog", async (d) => (dialogs.push(d.message()), await d.dismiss()));

      const missing: string[] = [];
      page.on("response", (r) => {
        if (r.status() === 404) missing.push(r.url());
      });
      await t.step("sign-in with the key; the key never enters a URL", async () => {
        await page.goto(`${origin}/dashboard?compare=previous_period`, { waitUntil: "domcontentloaded" });
        await page.waitForSelector("#signin:not(.hidden)");
        assert.deepEqual(await pageFaults(page), [], "signed out");
        await page.type("#key", key);
        await page.click("#signin button[type=submit]");
        await page.waitForSelector("body[data-loaded]", { timeout: 30_000 });
        assert.equal(await page.$eval("body", (b) => b.dataset.loaded), "true");
        assert.ok(urls.every((u) => !u.includes(key)), "key in a URL");
        assert.ok(!page.url().includes(key));
      });

      await t.step("first load with a signed-in tab: charts, tables and counters drawn", async () => {
        const started = performance.now();
        await page.goto(`${origin}/dashboard?timezone=UTC&compare=previous_period`, {
          waitUntil: "domcontentloaded",
        });
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        const ms = performance.now() - started;
        console.log(`dashboard first load (signed-in tab, demo data): ${ms.toFixed(0)} ms`);
        const canvases = await page.$$eval("#chart canvas", (cs) => cs.length);
        assert.ok(canvases >= 1, "uPlot canvas");
        assert.deepEqual(await pageFaults(page), [], "signed in, comparing");
        // The chart has ink: some pixel of the canvas is not transparent.
        const inked = await page.$eval("#chart canvas", (el) => {
          const c = el as HTMLCanvasElement;
          const d = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
          for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) return true;
          return false;
        });
        assert.ok(inked, "chart drawn");
        // The widget field offers the tenant's widgets by name: their ids are shown nowhere else.
        await page.waitForSelector("#widgets option");
        assert.deepEqual(
          await page.$$eval(
            "#widgets option",
            (os) => os.map((o) => [o.getAttribute("value"), o.getAttribute("label")]),
          ),
          [[widgetId, "Daily Ledger Ask AI"]],
        );
        // The cards name the period they are compared with once, above them.
        assert.match(
          await page.$eval("#cards .note", (e) => e.textContent ?? ""),
          /^Change against the previous period, \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d\.$/,
        );
        // The legend tells the lines apart as the chart does: the earlier period's marker is dashed.
        const markers = await page.$$eval("#chart .u-legend .u-marker", (ms) =>
          ms.map((m) => {
            const style = (m as HTMLElement).style;
            return `${style.borderStyle} ${style.borderColor}`;
          }));
        // (The first row is the day, which has no line.)
        assert.deepEqual(markers.slice(1), [
          "solid rgb(47, 111, 237)",
          "solid rgb(196, 50, 10)",
          "dashed rgb(102, 112, 133)",
        ]);
        // A view without dates is of whole days (it ends yesterday), so no day under way is drawn;
        // today so far is shown apart, under "Right now".
        assert.equal(await page.$eval("#chart-note", (e) => e.textContent), "");
        assert.match(
          await page.$eval("#today", (e) => e.textContent ?? ""),
          /^Today so far \(2026-11-22, UTC\): [\d,]+ sessions, [\d,]+ queries, [\d,]+ clicks\./,
        );
        // The canvas is silent to a screen reader: its box says what it shows.
        assert.equal(await page.$eval("#chart", (e) => e.getAttribute("role")), "img");
        assert.match(
          await page.$eval("#chart", (e) => e.getAttribute("aria-label") ?? ""),
          /^Daily sessions and queries, \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d: [\d,]+ sessions, [\d,]+ queries; [\d,]+ sessions in the previous period$/,
        );
        for (const id of ["by-placement", "by-deployment", "by-referrer", "articles", "agents", "logs"]) {
          const rows = await page.$$eval(`#${id} tbody tr`, (r) => r.length);
          assert.ok(rows > 0, id);
        }
        assert.ok((await page.$$eval("#depth .bar", (b) => b.length)) === 7);
        assert.ok((await page.$$eval("#realtime .card", (b) => b.length)) === 3);
        assert.match(await page.$eval("#cards", (e) => e.textContent ?? ""), /Sessions/);
        // Readable numbers: percentages carry their sign, the agents table names the demo's agents.
        assert.match(await page.$eval("#cards", (e) => e.textContent ?? ""), /Viewability/);
        assert.match(await page.$eval("#agents", (e) => e.textContent ?? ""), /payproxy:newsbrief-agent/);
        assert.match(await page.$eval("#articles", (e) => e.textContent ?? ""), /%/);
        console.log(`screenshot: ${await session.shot("dashboard demo data")}`);
        assert.deepEqual(missing, [], "every request the page makes is answered (no favicon 404)");
      });

      await t.step("a normal load is answered from the server cache; Refresh computes every panel anew", async () => {
        // Each dashboard call as the server saw it: the request's Cache-Control and each panel's cache verdict.
        const loads: { cacheControl: string | null; verdicts: Promise<string[]> }[] = [];
        server.setHandler(async (req) => {
          const res = await w.app.fetch(req);
          if (new URL(req.url).pathname === "/v1/analytics/dashboard") {
            loads.push({
              cacheControl: req.headers.get("cache-control"),
              verdicts: res.clone().text().then((body) =>
                body.split("\n").filter(Boolean).map((l) => JSON.parse(l))
                  .filter((l) => l.status === 200 && l.panel !== "realtime").map((l) => String(l.cache))
              ),
            });
          }
          return res;
        });
        try {
          await page.goto(`${origin}/dashboard?timezone=UTC&compare=previous_period`, {
            waitUntil: "domcontentloaded",
          });
          await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
          await page.click("#refresh");
          while (loads.length < 2) await new Promise((r) => setTimeout(r, 20));
          await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
          const [normal, refreshed] = loads;
          assert.equal(normal.cacheControl, null, "a normal load sends no Cache-Control");
          const normalVerdicts = await normal.verdicts;
          assert.ok(normalVerdicts.length > 0 && normalVerdicts.every((v) => v === "HIT"), normalVerdicts.join());
          assert.equal(refreshed.cacheControl, "no-cache");
          const refreshedVerdicts = await refreshed.verdicts;
          assert.ok(
            refreshedVerdicts.length > 0 && refreshedVerdicts.every((v) => v === "BYPASS"),
            refreshedVerdicts.join(),
          );
        } finally {
          server.setHandler(w.app.fetch);
        }
      });

      await t.step("a prompt or page URL with no space wraps in its cell: every table fits its panel", async () => {
        assert.ok(
          (await page.$$eval("#logs td", (tds) => tds.map((td) => td.textContent))).includes(LONG_PROMPT),
          "long prompt shown",
        );
        assert.deepEqual(await overflowing(page), []);
        // The answers keep a readable column beside the long question.
        const answerWidth = await page.$eval("#logs th:nth-child(3)", (th) => th.getBoundingClientRect().width);
        assert.ok(answerWidth >= 200, `answer column ${answerWidth} px`);
      });

      await t.step("a 360 px wide phone: every panel fits the width, nothing scrolls sideways", async () => {
        await page.setViewport({ width: 360, height: 800 });
        await page.goto(`${origin}/dashboard?timezone=UTC&compare=previous_period`, { waitUntil: "domcontentloaded" });
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        const overflow = await page.evaluate(() => {
          return document.documentElement.scrollWidth;
        });
        assert.ok(overflow <= 360, `page is ${overflow} px wide`);
        assert.deepEqual(await overflowing(page), [], "no table scrolls sideways, no bar label is cut");
        console.log(`screenshot: ${await session.shot("dashboard narrow")}`);
        assert.deepEqual(await pageFaults(page), [], "phone");
        await page.setViewport({ width: 1280, height: 1800 });
      });

      await t.step("a prompt of <img src=x onerror=...> executes nothing and is shown as text", async () => {
        const xss = await page.evaluate(() => (window as Window & { __xss?: string }).__xss);
        assert.equal(xss, undefined);
        assert.equal(dialogs.length, 0);
        assert.equal(await page.$$eval("#logs img, #logs script, #logs b", (e) => e.length), 0);
        const cells = await page.$$eval("#logs td", (tds) => tds.map((td) => td.textContent));
        assert.ok(cells.includes(XSS_PROMPT), "prompt shown literally");
        assert.ok(cells.some((c) => c?.startsWith("<script>")), "response shown literally");
      });

      await t.step("the default view shows its last 7 whole days and zone in the fields, not in the URL", async () => {
        const end = addDays(dayIn("UTC", w.clock.now()), -1);
        await page.goto(`${origin}/dashboard`, { waitUntil: "domcontentloaded" });
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        assert.deepEqual(await viewFields(page), {
          start_date: addDays(end, -6),
          end_date: end,
          timezone: "UTC",
          compare: "previous_period",
          widget_id: "",
          placement_id: "",
          deployment_type: "",
        });
        assert.equal(
          await page.$eval("#status", (e) => e.textContent),
          `Last 7 whole days: ${addDays(end, -6)} to ${end} · UTC`,
        );
        assert.deepEqual(urlView(page), {});
        console.log(`screenshot: ${await session.shot("dashboard default range")}`);
      });

      await t.step("Apply without touching a date keeps the view rolling (no dates, no zone in the URL)", async () => {
        await page.click("#filters button[type=submit]");
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        assert.deepEqual(urlView(page), { compare: "previous_period" });
        assert.equal(
          await page.$eval("input[name=end_date]", (i) => i.value),
          addDays(dayIn("UTC", w.clock.now()), -1),
        );
      });

      await t.step("editing one date fixes the range: both dates go in the URL", async () => {
        // The end field showed the default view's last whole day.
        const end = addDays(dayIn("UTC", w.clock.now()), -1);
        await page.$eval("input[name=start_date]", (i, day) => {
          i.value = day;
          i.dispatchEvent(new Event("input", { bubbles: true }));
          i.dispatchEvent(new Event("change", { bubbles: true }));
        }, addDays(end, -13));
        await page.click("#filters button[type=submit]");
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        assert.deepEqual(urlView(page), { start_date: addDays(end, -13), end_date: end, compare: "previous_period" });
        assert.equal(await page.$eval("#status", (e) => e.textContent), `${addDays(end, -13)} to ${end} · UTC`);
        const fields = await viewFields(page);
        assert.deepEqual([fields.start_date, fields.end_date], [addDays(end, -13), end]);
      });

      await t.step(
        "a URL with only a start date: the end field shows today, Apply keeps the URL as it was",
        async () => {
          const end = dayIn("UTC", w.clock.now());
          await page.goto(`${origin}/dashboard?start_date=${addDays(end, -2)}`, { waitUntil: "domcontentloaded" });
          await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
          const fields = await viewFields(page);
          assert.deepEqual([fields.start_date, fields.end_date], [addDays(end, -2), end]);
          await page.click("#filters button[type=submit]");
          await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
          assert.deepEqual(urlView(page), { start_date: addDays(end, -2), compare: "previous_period" });
        },
      );

      await t.step("a zone ahead of UTC: the fields show that zone's days, the compare field shows None", async () => {
        // UTC+14: the fixed clock's noon UTC is already the next day there.
        const zone = "Pacific/Kiritimati";
        const end = addDays(dayIn(zone, w.clock.now()), -1);
        assert.notEqual(end, addDays(dayIn("UTC", w.clock.now()), -1));
        await page.goto(`${origin}/dashboard?timezone=${zone}&compare=`, { waitUntil: "domcontentloaded" });
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        const fields = await viewFields(page);
        assert.deepEqual([fields.start_date, fields.end_date, fields.timezone], [addDays(end, -6), end, zone]);
        assert.equal(
          await page.$eval("select[name=compare]", (s) => s.selectedOptions[0]?.textContent),
          "None",
        );
        assert.deepEqual(urlView(page), { timezone: zone, compare: "" });
        // The latest questions are timed in the view's zone too, and say which.
        assert.equal(await page.$eval("#logs th", (th) => th.textContent), `Time (${zone})`);
        const logs = await (await w.app.request(
          `/v1/analytics/ask-ai/logs?timezone=${zone}&start_date=${addDays(end, -6)}&end_date=${end}&limit=1`,
          { headers: { authorization: `Bearer ${key}` } },
        )).json();
        const newest = new Date(logs.data[0].timestamp);
        const hhmm = new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit" })
          .format(newest);
        assert.equal(await page.$eval("#logs td", (td) => td.textContent), `${dayIn(zone, newest)} ${hhmm}`);
      });

      await t.step("the view (dates, zone, filters) is in the URL and survives a reload", async () => {
        await page.goto(`${origin}/dashboard?start_date=2026-11-01&end_date=2026-11-22&timezone=Asia/Tokyo`, {
          waitUntil: "domcontentloaded",
        });
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        assert.equal(
          await page.$eval("input[name=timezone]", (i) => i.value),
          "Asia/Tokyo",
        );
        assert.match(await page.$eval("#status", (e) => e.textContent ?? ""), /2026-11-01 to 2026-11-22 · Asia\/Tokyo/);
      });

      await t.step("a view the API refuses (unknown zone) says why once, in the status line", async () => {
        await page.goto(`${origin}/dashboard?timezone=Nowhere/Land&widget_id=wd_x`, { waitUntil: "domcontentloaded" });
        await page.waitForSelector("body[data-loaded=error]", { timeout: 30_000 });
        assert.equal(await page.$eval("#status", (e) => e.textContent), "Could not load");
        assert.equal(await colourOf(page, "#status"), BAD_RED, "the failure reads as one");
        assert.equal(
          await page.$eval("#problem-text", (e) => e.textContent),
          "Could not load: timezone must be a valid IANA time zone name",
        );
        assert.equal(await page.$("[id$=-scope]:not(.hidden)"), null, "no note on a panel that shows nothing");
        // Retrying the same view cannot help: no Retry button, the fields are the way out.
        assert.equal(await page.$("#retry:not(.hidden)"), null);
        assert.equal(await page.$eval("#cards", (e) => e.textContent), "Not loaded.");
      });

      await t.step("a panel that does not apply a filter says so under its heading", async () => {
        await page.goto(`${origin}/dashboard?placement_id=pl_top`, { waitUntil: "domcontentloaded" });
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        assert.equal(await page.$("#problem:not(.hidden)"), null);
        for (const id of ["realtime", "articles", "agents"]) {
          assert.equal(
            await page.$eval(`#${id}-scope`, (e) => e.textContent),
            "Not filtered by placement: these figures include every one.",
            id,
          );
        }
        // Apply makes a new history entry: Back returns to the previous view, not to another page.
        await page.$eval("input[name=placement_id]", (i) => {
          i.value = "pl_sidebar";
        });
        await page.click("#filters button[type=submit]");
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        assert.equal(urlView(page).placement_id, "pl_sidebar");
        await page.goBack();
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        assert.equal(urlView(page).placement_id, "pl_top");
        assert.equal((await viewFields(page)).placement_id, "pl_top");
        await page.goto(`${origin}/dashboard`, { waitUntil: "domcontentloaded" });
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        assert.equal(await page.$("#articles-scope:not(.hidden)"), null);
      });

      await t.step("a range with no events says so instead of drawing an empty chart", async () => {
        await page.goto(`${origin}/dashboard?start_date=2025-01-01&end_date=2025-01-07`, {
          waitUntil: "domcontentloaded",
        });
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        assert.equal(await page.$eval("#chart", (e) => e.textContent), "No sessions or queries in this range.");
        assert.equal(await page.$$eval("#chart canvas", (c) => c.length), 0);
        assert.equal(await page.$("#chart-note:not(.hidden)"), null);
        assert.equal(await page.$eval("#logs", (e) => e.textContent), "No questions in this range.");
        console.log(`screenshot: ${await session.shot("dashboard empty range")}`);
        assert.deepEqual(await pageFaults(page), [], "empty range");
      });

      await t.step("the chart's days carry their year across New Year; a single day sits mid-chart", async () => {
        await page.goto(`${origin}/dashboard?start_date=2025-11-23&end_date=2026-11-22`, {
          waitUntil: "domcontentloaded",
        });
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        const over = await page.$eval("#chart .u-over", (e) => {
          const r = e.getBoundingClientRect();
          return { x: r.x, y: r.y, w: r.width, h: r.height };
        });
        await page.mouse.move(over.x + 2, over.y + over.h / 2);
        const legendDay = () => page.$eval("#chart .u-legend .u-value", (e) => e.textContent);
        assert.match(await legendDay() ?? "", /^2[34] Nov 2025$/);
        await page.mouse.move(over.x + over.w - 2, over.y + over.h / 2);
        assert.match(await legendDay() ?? "", /^2[12] Nov 2026$/);

        await page.goto(`${origin}/dashboard?start_date=2026-11-20&end_date=2026-11-20`, {
          waitUntil: "domcontentloaded",
        });
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        // Where the sessions line's blue is drawn, as a share of the canvas width.
        const blueAt = await page.$eval("#chart canvas", (el) => {
          const c = el as HTMLCanvasElement;
          const d = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
          const xs: number[] = [];
          for (let i = 0; i < d.length; i += 4) {
            if (d[i] === 47 && d[i + 1] === 111 && d[i + 2] === 237) xs.push((i / 4) % c.width);
          }
          return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length / c.width : -1;
        });
        assert.ok(blueAt > 0.4 && blueAt < 0.6, `the day is drawn at ${(100 * blueAt).toFixed(0)}% of the width`);
      });

      await t.step("Sign out keeps no figure in the page; signing in again puts focus on the page", async () => {
        await page.click("#signout");
        await page.waitForSelector("#signin:not(.hidden)");
        assert.equal(await page.$eval("#message", (e) => e.textContent), "Signed out.");
        assert.notEqual(await colourOf(page, "#message"), BAD_RED, "a notice, not an error");
        const left = await page.$eval("#app", (e) => e.textContent ?? "");
        for (const data of ["payproxy:", "Sessions", XSS_PROMPT, "No questions"]) {
          assert.ok(!left.includes(data), `${data} still in the page`);
        }
        assert.equal(await page.evaluate(() => sessionStorage.getItem("analytics_api_key")), null);
        assert.equal(await page.$$eval("#widgets option", (o) => o.length), 0, "the widget names are gone too");
        await page.type("#key", key);
        await page.keyboard.press("Enter");
        await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
        const focused = await page.evaluate(() => document.activeElement?.id);
        assert.equal(focused, "title");
      });

      await t.step(
        "keyboard only: Tab reaches the view's fields, Enter applies them, Refresh works from the keyboard",
        async () => {
          const reach = async (selector: string) => {
            for (let i = 0; i < 40; i++) {
              await page.keyboard.press("Tab");
              const there = await page.evaluate(
                (s) => document.activeElement?.matches(s) ?? false,
                selector,
              );
              if (there) return;
            }
            throw new Error(`Tab never reached ${selector}`);
          };
          await page.focus("#title");
          await reach("input[name=timezone]");
          await page.keyboard.down("Control");
          await page.keyboard.press("KeyA");
          await page.keyboard.up("Control");
          await page.keyboard.type("Asia/Tokyo");
          await page.keyboard.press("Enter");
          await page.waitForFunction(() =>
            new URL(globalThis.location.href).searchParams.get("timezone") === "Asia/Tokyo"
          );
          await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
          assert.match(await page.$eval("#status", (e) => e.textContent ?? ""), /Asia\/Tokyo$/);
          await page.focus("#title");
          await reach("#refresh");
          await page.keyboard.press("Enter");
          await page.waitForSelector("body[data-loaded=true]", { timeout: 30_000 });
          assert.deepEqual(await pageFaults(page), [], "after a keyboard refresh");
        },
      );

      await t.step(
        "the whole session: no script error, every request to this origin, the key only in its header",
        () => {
          assert.deepEqual(scriptErrors, []);
          assert.deepEqual(
            urls.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith("data:")),
            [],
            "works offline",
          );
          assert.ok(urls.every((u) => !u.includes(key)), "key in a URL");
          assert.deepEqual(keyElsewhere, []);
        },
      );

      await t.step("a wrong key shows a clear message", async () => {
        const fresh = await browser.createBrowserContext();
        const p2 = await fresh.newPage();
        await p2.goto(`${origin}/dashboard`, { waitUntil: "domcontentloaded" });
        await p2.waitForSelector("#signin:not(.hidden)");
        await p2.type("#key", "ak_this_key_does_not_exist");
        await p2.click("#signin button[type=submit]");
        await p2.waitForFunction(() => /not accepted/.test(document.getElementById("message")?.textContent ?? ""), {
          timeout: 15_000,
        });
        assert.equal(await p2.evaluate(() => sessionStorage.getItem("analytics_api_key")), null);
        await fresh.close();
      });

      await t.step("a failure that may pass (429, 500, no network) says what happened and Retry recovers", async () => {
        // A tenant of its own with one analytics request a minute: the real limiter answers 429.
        await using w2 = await createTestWorld({ env: { ANALYTICS_RATE_LIMIT_PER_MIN: "1" } });
        const { key: key2 } = await w2.tenantWithKey("Quiet Media");
        await using server2 = serveLocal();
        // A server that fails once, as a crashed upstream would, or holds the answer, as a slow one
        // would, when the test asks.
        let failNext = false;
        let held: Promise<void> | undefined;
        server2.setHandler(async (req) => {
          if (new URL(req.url).pathname === "/v1/analytics/dashboard") {
            if (failNext) {
              failNext = false;
              return Response.json({ message: "Internal server error" }, { status: 500 });
            }
            if (held) await held;
          }
          return w2.app.fetch(req);
        });
        const ctx = await browser.createBrowserContext();
        const p3 = await ctx.newPage();
        await p3.setViewport({ width: 1280, height: 900 });
        const loadedAs = async (state: string) => {
          await p3.waitForSelector(`body[data-loaded=${state}]`, { timeout: 30_000 });
        };
        const banner = () => p3.$eval("#problem-text", (e) => e.textContent ?? "");
        const retry = async () => {
          w2.clock.advance(61_000);
          await p3.click("#retry");
          await loadedAs("true");
          assert.equal(await p3.$("#problem:not(.hidden)"), null);
          assert.equal(
            await p3.$eval("#status", (e) => e.textContent),
            "Last 7 whole days: 2026-11-15 to 2026-11-21 · UTC",
          );
        };
        await p3.goto(`${server2.url}/dashboard`, { waitUntil: "domcontentloaded" });
        await p3.waitForSelector("#signin:not(.hidden)");
        await p3.type("#key", key2);
        await p3.keyboard.press("Enter");
        await loadedAs("true");
        // An account with no events says so in every panel.
        assert.equal(await p3.$eval("#chart", (e) => e.textContent), "No sessions or queries in this range.");

        await p3.click("#filters button[type=submit]");
        await loadedAs("error");
        assert.match(await banner(), /^Could not load: too many requests with this key; try again in \d+ s$/);
        assert.equal(await colourOf(p3, "#status"), BAD_RED);
        assert.deepEqual(await pageFaults(p3), [], "an error banner");
        const shot = `${session.shotsDir}/rate-limited.png` as const;
        await p3.screenshot({ path: shot as `${string}.png` });
        console.log(`screenshot: ${shot}`);
        await retry();

        failNext = true;
        w2.clock.advance(61_000);
        await p3.click("#filters button[type=submit]");
        await loadedAs("error");
        assert.equal(await banner(), "Could not load: the server failed (HTTP 500); try again");
        await retry();

        // No network: the browser drops the analytics request as a lost connection would. Chromium's
        // offline emulation is not applied to localhost every time (puppeteer issues 9959, 13840), so a
        // request sometimes reached the server and met its rate limit instead.
        await p3.setRequestInterception(true);
        const cutOff = (req: HTTPRequest) =>
          new URL(req.url()).pathname.startsWith("/v1/analytics/") ? req.abort("internetdisconnected") : req.continue();
        p3.on("request", cutOff);
        await p3.click("#filters button[type=submit]");
        await loadedAs("error");
        assert.equal(
          await banner(),
          "Could not load: the server could not be reached; check the connection and try again",
        );
        p3.off("request", cutOff);
        await p3.setRequestInterception(false);
        await retry();

        // While the next view loads, the figures still shown are the previous view's: dimmed and busy.
        let release = () => {};
        held = new Promise<void>((r) => release = r);
        try {
          w2.clock.advance(61_000);
          await p3.click("#filters button[type=submit]");
          await p3.waitForFunction(() =>
            document.getElementById("status")?.textContent ===
              "Loading…"
          );
          assert.equal(await p3.$$eval("main [aria-busy=true].stale", (e) => e.length), 13); // every panel, today included
        } finally {
          // A held answer would keep the server from shutting down.
          release();
          held = undefined;
        }
        await loadedAs("true");
        assert.equal(await p3.$$eval(".stale, [aria-busy]", (e) => e.length), 0);
        await ctx.close();
      });
    }
  } finally {
    await w.close();
  }
});

Deno.test("GET /dashboard: strict CSP, no inline script, assets served from the installed uPlot", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/dashboard");
  assert.equal(res.status, 200);
  const csp = res.headers.get("content-security-policy")!;
  assert.match(csp, /script-src 'self'/);
  assert.ok(!csp.includes("unsafe-inline"));
  const html = await res.text();
  assert.ok(!/<script>(?!<)/.test(html), "no inline script");
  assert.ok(!/https?:\/\//.test(html.replace(/http:\/\/127\.0\.0\.1[^"]*/g, "")), "no third-party URL");
  assert.equal(res.headers.get("referrer-policy"), "no-referrer");
  // The key field has no name, so a form submitted without the script carries no key in its URL.
  assert.match(html, /<input id="key" type="password"/);
  assert.ok(!/name="key"/.test(html));
  assert.match(html, /<meta name="referrer" content="no-referrer">/);
  const uplot = await w.app.request("/dashboard/assets/uplot.min.js");
  assert.equal(uplot.status, 200);
  assert.match(await uplot.text(), /uPlot/);
  assert.equal(uplot.headers.get("cache-control"), "public, no-cache");
  for (const bad of ["../deps.ts", "%2e%2e%2fdashboard.ts", "app.js", "__proto__", "constructor"]) {
    const r = await w.app.request(`/dashboard/assets/${bad}`);
    assert.equal(r.status, 404, bad);
    await r.body?.cancel();
  }
});

Deno.test("GET /dashboard assets: hashed URLs cached as immutable, ETag revalidation, gzip when accepted", async () => {
  await using w = await createTestWorld();
  const html = await (await w.app.request("/dashboard")).text();
  const urls = [...html.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  assert.deepEqual(urls.map((u) => u.replace(/\?v=[0-9a-f]{16}$/, "")).sort(), [
    "/dashboard/assets/dashboard.css",
    "/dashboard/assets/dashboard.js",
    "/dashboard/assets/uplot.min.css",
    "/dashboard/assets/uplot.min.js",
  ]);
  for (const url of urls) {
    const plain = await w.app.request(url);
    assert.equal(plain.status, 200, url);
    assert.equal(plain.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.equal(plain.headers.get("content-encoding"), null);
    const etag = plain.headers.get("etag")!;
    assert.match(etag, /^"[0-9a-f]{16}"$/);
    assert.equal(`"${url.split("?v=")[1]}"`, etag, "the URL names the content");
    const bytes = new Uint8Array(await plain.arrayBuffer());
    const zipped = await w.app.request(url, { headers: { "accept-encoding": "gzip, deflate, br" } });
    assert.equal(zipped.headers.get("content-encoding"), "gzip");
    assert.equal(zipped.headers.get("vary"), "Accept-Encoding");
    const packed = new Uint8Array(await zipped.arrayBuffer());
    assert.ok(packed.length < bytes.length);
    const unpacked = await new Response(new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip")))
      .arrayBuffer();
    assert.deepEqual(new Uint8Array(unpacked), bytes);
    const again = await w.app.request(url, { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304);
    assert.equal(again.headers.get("etag"), etag);
    assert.equal((await again.arrayBuffer()).byteLength, 0);
    const refused = await w.app.request(url, { headers: { "accept-encoding": "gzip;q=0" } });
    assert.equal(refused.headers.get("content-encoding"), null);
    await refused.body?.cancel();
  }
  // A stale or forged version is served but not marked immutable.
  const stale = await w.app.request("/dashboard/assets/dashboard.js?v=0000000000000000");
  assert.equal(stale.headers.get("cache-control"), "public, no-cache");
  await stale.body?.cancel();
  const page = await w.app.request("/dashboard", { headers: { "accept-encoding": "gzip" } });
  assert.equal(page.headers.get("content-encoding"), "gzip");
  assert.equal(page.headers.get("cache-control"), "no-store");
  assert.match(page.headers.get("content-security-policy")!, /script-src 'self'/);
  await page.body?.cancel();
});

Deno.test("the dashboard page and its assets are served with no file read (what deno compile embeds)", async () => {
  // A child with no --allow-read at all: every asset must come from the module graph.
  const root = new URL("../../", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "tests/analytics/_dashboard_assets_child.ts"],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const lines = text.trim().split("\n");
  assert.equal(lines.length, 5, text);
  for (const line of lines) assert.match(line, /^200 [1-9]\d* \//, line);
  assert.ok(lines.some((l) => /uplot\.min\.js\?v=[0-9a-f]{16}$/.test(l)));
});
