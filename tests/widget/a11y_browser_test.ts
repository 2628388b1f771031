/**
 * The widget in Chromium beyond the truth test: axe-core finds no serious or critical violation
 * with the panel open, a reader can do everything from the keyboard, and server text that looks
 * like HTML is shown as text. All on the demo site, whose pages carry a strict CSP (scripts and
 * requests from the service's origin only, nothing inline): a CSP violation fails the test.
 */
import assert from "node:assert/strict";
import type { Page } from "puppeteer-core";
import { seriousViolations } from "../_axe.ts";
import { answerTo, openSharedBrowser, widgetWorld } from "./_browser_world.ts";

const W = "ask-ai-widget";
const inWidget = (sel: string) => `${W} >>> ${sel}`;

/** Records CSP violations in the page (installed over CDP, so the page's CSP does not block it). */
async function watchCsp(page: Page): Promise<() => Promise<string[]>> {
  await page.evaluateOnNewDocument(`globalThis.cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) => {
      globalThis.cspViolations.push(e.violatedDirective + " " + e.blockedURI);
    });`);
  return () => page.evaluate("globalThis.cspViolations") as Promise<string[]>;
}

/** The id (or tag) of the element focused inside the widget's shadow root, "" when focus is elsewhere. */
const focused = (page: Page) =>
  page.evaluate(`(() => {
    const a = document.querySelector("${W}")?.shadowRoot?.activeElement;
    if (document.activeElement?.tagName !== "ASK-AI-WIDGET" || !a) return "";
    return a.id || a.className || a.tagName.toLowerCase();
  })()`) as Promise<string>;

/**
 * Puts `text` in the widget's `selector` field as one input event, as a paste does: the widget reads
 * the field on submit only, and typed key by key each character cost three protocol round trips and
 * a frame. The keyboard test still types its question key by key.
 */
async function pasteInto(page: Page, selector: string, text: string): Promise<void> {
  await page.focus(inWidget(selector));
  await page.keyboard.sendCharacter(text);
}

/** Presses Enter (sends the question, or picks the focused question) and waits for the answer. */
const enterAndAnswer = (page: Page) => answerTo(page, () => page.keyboard.press("Enter"));

Deno.test({
  name: "widget a11y: axe-core reports no serious or critical violation with the docked panel open and answered",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using world = await widgetWorld();
    await using b = await openSharedBrowser("widget axe");
    const csp = await watchCsp(b.page);
    await b.page.goto(`${world.siteUrl}/docked.html`, { waitUntil: "load" });
    await b.page.waitForSelector(`${W}[data-state=ready]`);
    await b.page.click(inWidget(".launcher"));
    await pasteInto(b.page, "#ask-q", "What is happening with the harbour port strike?");
    await enterAndAnswer(b.page);
    await b.page.waitForSelector(inWidget(".follow button"));
    // The docked panel floats in the window: its first screen is what a reader sees.
    await b.screen("docked open answered");
    assert.deepEqual(await seriousViolations(b.page), []);

    // The docked button also closes the panel it opened, and that is a widget_close.
    await b.page.click(inWidget(".launcher"));
    assert.equal(await b.page.$eval(inWidget(".panel"), (e) => (e as HTMLElement).hidden), true);
    assert.equal(await b.page.$eval(inWidget(".launcher"), (e) => e.getAttribute("aria-expanded")), "false");

    // The inline widget on the article page too.
    await b.page.goto(world.siteUrl, { waitUntil: "load" });
    await world.until("widget_close", () => world.events.some((e) => e.event_type === "widget_close"));
    await b.page.waitForSelector(`${W}[data-state=ready]`);
    // The inline widget sits below the article's first screen: the shot is of the widget itself.
    await b.shot("inline", W);
    assert.deepEqual(await seriousViolations(b.page), []);
    assert.deepEqual(await csp(), []);
  },
});

Deno.test({
  name: "widget keyboard: open, ask, pick a follow-up and close with the keyboard alone; focus returns to the button",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using world = await widgetWorld();
    await using b = await openSharedBrowser("widget keyboard");
    const page = b.page;
    // Counts the page's sendBeacon calls and what they answered (installed over CDP).
    await page.evaluateOnNewDocument(`globalThis.beacons = [];
      const send = navigator.sendBeacon.bind(navigator);
      navigator.sendBeacon = (url, body) => { const ok = send(url, body); globalThis.beacons.push(ok); return ok; };`);
    await page.goto(`${world.siteUrl}/docked.html`, { waitUntil: "load" });
    await page.waitForSelector(`${W}[data-state=ready]`);
    for (let i = 0; i < 10 && (await focused(page)) !== "launcher"; i++) await page.keyboard.press("Tab");
    assert.equal(await focused(page), "launcher", "Tab reaches the docked button");
    await page.keyboard.press("Enter");
    assert.equal(await focused(page), "ask-q", "opening the panel puts focus in the question box");
    assert.equal(await page.$eval(inWidget(".launcher"), (e) => e.getAttribute("aria-expanded")), "true");
    await page.keyboard.type("What did the central bank decide on interest rates?");
    await enterAndAnswer(page);
    await page.waitForSelector(inWidget(".follow button"));
    await b.screen("answered by keyboard");
    // Back from the question box to the last follow-up question.
    for (let i = 0; i < 20; i++) {
      await page.keyboard.down("Shift");
      await page.keyboard.press("Tab");
      await page.keyboard.up("Shift");
      const inFollow = await page.evaluate(
        `document.querySelector("${W}").shadowRoot.activeElement?.closest(".follow") !== null`,
      );
      if (inFollow) break;
    }
    const chosen = await page.evaluate(`document.querySelector("${W}").shadowRoot.activeElement?.textContent`);
    assert.ok(
      (await page.$$eval(inWidget(".follow button"), (bs) => bs.map((x) => x.textContent))).includes(chosen as string),
      `focus reached a follow-up (${chosen})`,
    );
    await enterAndAnswer(page);
    assert.equal(await page.$eval(inWidget(".turn:last-child .q"), (e) => e.textContent), chosen);
    await b.screen("follow-up by keyboard");
    const other = await b.context.newPage(); // a second tab, opened before the close
    await page.bringToFront();
    await page.keyboard.press("Escape");
    const hidden = await page.$eval(inWidget(".panel"), (e) => (e as HTMLElement).hidden);
    const focus = await focused(page);
    // At once (before the 2 s batch timer), the reader switches tabs: the page is hidden and the
    // queued widget_close leaves with sendBeacon.
    await other.bringToFront();
    assert.equal(hidden, true);
    assert.equal(focus, "launcher", "closing returns focus to the button");
    await world.until("widget_close", () => world.events.some((e) => e.event_type === "widget_close"));
    const beacons = await page.evaluate("globalThis.beacons") as boolean[];
    assert.ok(beacons.length >= 1 && beacons.every((ok) => ok), `sendBeacon took the batch: ${beacons}`);
    await other.close();
    const queries = world.events.filter((e) => e.event_type === "query").map((e) => e.interaction_type);
    assert.deepEqual(queries, ["free_form", "automated_followup"]);
  },
});

Deno.test({
  name: "widget safety: titles and prompts that look like HTML are shown as text; data-no-track sends no event",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using world = await widgetWorld();
    const { repos } = world.w.deps;
    const widget = (await repos.widgets.get(world.widgetId))!;
    const hostile = `<img src=x onerror="document.title='pwned'">Ask`;
    await repos.widgets.update({ ...widget, title: hostile });
    const prompt = (await repos.prompts.get(widget.promptIds![0]!))!;
    const hostilePrompt = `<b>bold?</b> <a href="javascript:alert(1)">x</a>`;
    await repos.prompts.update({ ...prompt, text: hostilePrompt });

    await using b = await openSharedBrowser("widget safety");
    // The demo page with `data-no-track` on the script tag.
    await b.page.goto(`${world.siteUrl}/?no-track`, { waitUntil: "load" });
    await b.page.waitForSelector(`${W}[data-state=ready]`);
    await b.page.$eval(W, (e) => e.scrollIntoView({ block: "center" }));
    await b.screen("hostile text");
    assert.equal(await b.page.$eval(inWidget("h2"), (e) => e.textContent), hostile);
    assert.equal(await b.page.$(inWidget("h2 img")), null);
    assert.equal(await b.page.$(inWidget(".chips a, .chips b")), null);
    const chips = await b.page.$$eval(inWidget(".chips button"), (bs) => bs.map((x) => x.textContent));
    assert.ok(chips.includes(hostilePrompt), `the prompt is shown as text: ${chips}`);
    assert.notEqual(await b.page.title(), "pwned");

    // The widget works with analytics off and sends nothing.
    await pasteInto(b.page, "#ask-q", "What is happening with the harbour port strike?");
    await enterAndAnswer(b.page);
    await b.page.goto("about:blank");
    assert.ok(world.seen.some((s) => s.path.endsWith("/ask") && s.status === 200), "the question was answered");
    assert.equal(world.seen.filter((s) => s.path === "/v1/events").length, 0, "no event under data-no-track");
  },
});

Deno.test({
  name: "widget isolation: the page's CSS does not reach into the widget, and the widget's does not reach the page",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Nothing is asked here: the demo without its articles.
    await using world = await widgetWorld({ articles: false });
    await using b = await openSharedBrowser("widget isolation");
    const page = b.page;
    await page.goto(world.siteUrl, { waitUntil: "load" });
    const paragraph = () =>
      page.evaluate(`(() => {
        const s = getComputedStyle(document.querySelector("article p"));
        return [s.fontFamily, s.fontSize, s.color, s.lineHeight].join("|");
      })()`) as Promise<string>;
    const before = await paragraph();
    // A hostile page stylesheet (a constructed sheet: the page's CSP allows no inline style).
    await page.evaluate(`(() => {
      const s = new CSSStyleSheet();
      s.replaceSync("* { color: rgb(255, 0, 0) !important; font-family: serif !important }" +
        " button, input { background: rgb(255, 0, 0) !important; border: 9px solid red !important }" +
        " ask-ai-widget { --bg: rgb(255, 0, 0); --fg: rgb(255, 0, 0); --accent: rgb(255, 0, 0); color: rgb(255, 0, 0) !important }" +
        " .panel, .send, h2 { background: rgb(255, 0, 0) !important; display: none !important }");
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, s];
    })()`);
    await page.waitForSelector(`${W}[data-state=ready]`);
    await page.$eval(W, (e) => e.scrollIntoView({ block: "center" }));
    await b.screen("hostile page css");
    const inside = await page.evaluate(`(() => {
      const root = document.querySelector("ask-ai-widget").shadowRoot;
      const css = (sel, prop) => getComputedStyle(root.querySelector(sel))[prop];
      return {
        panelBg: css(".panel", "backgroundColor"),
        panelDisplay: css(".panel", "display"),
        titleColor: css("h2", "color"),
        titleFont: css("h2", "fontFamily"),
        sendBg: css(".send", "backgroundColor"),
        inputBorder: css("input", "borderTopWidth"),
      };
    })()`) as Record<string, string>;
    assert.equal(inside.panelBg, "rgb(255, 255, 255)");
    assert.equal(inside.panelDisplay, "flex");
    assert.notEqual(inside.titleColor, "rgb(255, 0, 0)");
    assert.doesNotMatch(inside.titleFont, /^serif$/);
    assert.equal(inside.sendBg, "rgb(11, 92, 173)", "the configured accent");
    assert.equal(inside.inputBorder, "1px");
    // Out: the page's own text is styled as before, apart from what the page itself just changed.
    await page.evaluate("document.adoptedStyleSheets = []");
    assert.equal(await paragraph(), before);
  },
});
