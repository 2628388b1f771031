/**
 * The widget on a publisher page that a third party has a hand in, in headless Chromium: HTML a
 * comment or a feed item let through, or a page whose `Object.prototype` a crafted link polluted.
 * The pages are served by a local server of their own (no CSP, as many publisher pages are), which
 * the widget is made to allow.
 */
import assert from "node:assert/strict";
import { serveLocal } from "../_browser.ts";
import { openSharedBrowser, type WidgetWorld, widgetWorld } from "./_browser_world.ts";

const W = "ask-ai-widget";

// These publisher pages fit the window, so their screenshots are of the window (BrowserSession.screen):
// the same pixels as a full-page shot, without resizing the page twice.

/** A local server for publisher pages, added to the widget's allowed origins. */
async function publisherSite(world: WidgetWorld): Promise<ReturnType<typeof serveLocal>> {
  const site = serveLocal();
  const patched = await world.w.app.request(`${world.serviceUrl}/v1/widgets/${world.widgetId}`, {
    method: "PATCH",
    headers: { authorization: `Bearer ${world.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ allowed_origins: [world.siteUrl, site.url] }),
  });
  assert.equal(patched.status, 200);
  return site;
}

Deno.test({
  name:
    "widget in Chromium: an <img name=currentScript> on the page does not move the loader or the widget to its origin",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Nothing is asked here: the demo without its articles.
    await using world = await widgetWorld({ articles: false });
    await using b = await openSharedBrowser("widget clobber");
    const page = b.page;
    // HTML with no script (a comment) hides document.currentScript: DOM clobbering.
    await using site = await publisherSite(world);
    await using attacker = serveLocal();
    const evil = attacker.url;
    const pageUrl = `${site.url}/comments.html`;
    // A publisher page (no CSP, as many are) whose comments let an image with a name through.
    const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>City news</title></head><body>
      <h1>City news</h1>
      <p>A reader's comment: <img name="currentScript" alt="" width="1" height="1"
        src="${evil}/pixel.png" data-widget-id="${world.widgetId}"></p>
      <div id="slot" style="min-height:480px"></div>
      <script src="${world.serviceUrl}/widget/v1/loader.js" data-widget-id="${world.widgetId}"
        data-target="#slot" async></script>
      </body></html>`;
    site.setHandler(() => new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } }));
    const toEvil: string[] = [];
    attacker.setHandler(async (req) => {
      const path = new URL(req.url).pathname;
      const cors = { "access-control-allow-origin": "*", "access-control-allow-headers": "content-type" };
      if (path === "/pixel.png") return new Response(null, { status: 404 });
      toEvil.push(`${req.method} ${path}`);
      if (req.method === "OPTIONS") return new Response(null, { status: 204, headers: cors });
      if (path.startsWith("/widget/v1/assets/")) {
        // The attacker serves our exact bytes (so the integrity check passes) from their origin.
        const body = await (await world.w.app.request(`${world.serviceUrl}${path}`)).text();
        return new Response(body, { headers: { ...cors, "content-type": "text/javascript" } });
      }
      if (path.endsWith("/config")) {
        const config = {
          widget_id: world.widgetId,
          title: "Log in again to keep reading",
          placeholder: "Your email and password",
          mode: "inline",
          position: "bottom-right",
          theme: "light",
          colors: { accent: "#aa0000" },
          prompts: [],
          sponsored: [],
          recommendations: { enabled: false },
          attribution: { show_powered_by: false, text: "", url: "" },
          deployment_type: "embed",
        };
        return Response.json(config, { headers: cors });
      }
      return Response.json({}, { status: 202, headers: cors });
    });

    await page.goto(pageUrl, { waitUntil: "load" });
    await page.waitForSelector(`${W}[data-state]`, { timeout: 10_000 }).catch(() => {});
    await b.screen("clobbered page");
    const title = await page.$eval(W, (e) => e.shadowRoot?.querySelector("h2")?.textContent ?? null).catch(() => null);
    assert.deepEqual(toEvil, [], "nothing is requested from the clobbering image's origin");
    assert.equal(await page.$eval(W, (e) => e.getAttribute("data-state")), "ready", "the widget draws");
    assert.notEqual(title, "Log in again to keep reading");
    // The configuration and the widget script came from the service, once each.
    assert.equal(world.seen.filter((s) => s.method === "GET" && s.path.endsWith("/config")).length, 1);
  },
});

Deno.test({
  name: "widget in Chromium: a polluted Object.prototype adds no attribute, class or text to what the widget draws",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using world = await widgetWorld();
    await using b = await openSharedBrowser("widget prototype pollution");
    const page = b.page;
    await using site = await publisherSite(world);
    // What a query-string parser with a pollution bug does for `?__proto__[attrs][onmouseover]=...`:
    // on its own harmless, it becomes script in the reader's page if the widget reads inherited
    // fields. The pollution also upsets puppeteer's own scripts, so the page looks once the widget
    // has drawn its related articles, hovers every element, and then cleans up for the test to read.
    const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>City news</title>
      <script>
        Object.prototype.attrs = { onmouseover: "window.pwned = true", title: "injected" };
        Object.prototype.class = "injected";
        Object.prototype.text = "Your session expired: log in again";
        const timer = setInterval(() => {
          const root = document.querySelector("ask-ai-widget")?.shadowRoot;
          if (!root?.querySelector(".recs li")) return;
          clearInterval(timer);
          const all = [...root.querySelectorAll("*")];
          for (const e of all) e.dispatchEvent(new MouseEvent("mouseover"));
          document.body.dataset.found = JSON.stringify({
            handlers: all.filter((e) => e.hasAttribute("onmouseover") || e.getAttribute("title") === "injected").length,
            classes: all.filter((e) => e.classList.contains("injected")).length,
            text: root.textContent.includes("log in again"),
            ran: window.pwned === true,
          });
          delete Object.prototype.attrs;
          delete Object.prototype.class;
          delete Object.prototype.text;
        }, 20);
      </script></head><body>
      <h1>City news</h1>
      <div id="slot" style="min-height:480px"></div>
      <script src="${world.serviceUrl}/widget/v1/loader.js" data-widget-id="${world.widgetId}"
        data-target="#slot" async></script>
      </body></html>`;
    site.setHandler(() => new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } }));
    await page.goto(`${site.url}/article.html`, { waitUntil: "load" });
    await page.waitForSelector("body[data-found]");
    await b.screen("polluted page");
    const found = JSON.parse(await page.$eval("body", (e) => e.dataset.found ?? "{}"));
    assert.deepEqual(found, { handlers: 0, classes: 0, text: false, ran: false });
  },
});

Deno.test({
  name:
    "widget in Chromium: a polluted Object.prototype does not fill the fields the configuration left out (sponsored events' line_item_id)",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using world = await widgetWorld();
    await using b = await openSharedBrowser("widget polluted fields");
    const page = b.page;
    await using site = await publisherSite(world);
    // The seeded campaign's prompts name a creative and no line item: a crafted link to a page with
    // a pollution bug (`?__proto__[line_item_id]=li_other`) must not credit that line item.
    const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>City news</title>
      <script>
        Object.prototype.line_item_id = "li_polluted";
        const timer = setInterval(() => {
          const root = document.querySelector("ask-ai-widget")?.shadowRoot;
          const chip = [...(root?.querySelectorAll(".chips button") ?? [])].find((c) => c.querySelector(".badge"));
          if (!chip) return;
          clearInterval(timer);
          chip.click();
          delete Object.prototype.line_item_id;
          document.body.dataset.clicked = "";
        }, 20);
      </script></head><body>
      <h1>City news</h1>
      <div id="slot" style="min-height:480px"></div>
      <script src="${world.serviceUrl}/widget/v1/loader.js" data-widget-id="${world.widgetId}"
        data-target="#slot" async></script>
      </body></html>`;
    site.setHandler(() => new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } }));
    await page.goto(`${site.url}/article.html`, { waitUntil: "load" });
    await page.waitForSelector("body[data-clicked]");
    await world.until(
      "the sponsored impression",
      () => world.events.some((e) => e.event_type === "sponsored_impression"),
    );
    await b.screen("sponsored chip chosen");
    const sponsored = world.events.filter((e) =>
      e.event_type === "sponsored_impression" || e.event_type === "prompt_impression"
    );
    assert.ok(sponsored.length >= 2);
    for (const e of sponsored) {
      assert.equal(e.line_item_id, undefined, `${e.event_type} names no line item`);
      assert.equal(e.creative_id, "cr_1001");
    }
  },
});
