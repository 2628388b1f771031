/**
 * A hostile host page without script: HTML that a comment, a feed item or a sanitiser let through
 * (`<img name="currentScript" src="https://evil.example/...">`) shadows `document.currentScript`
 * (DOM clobbering: a document's named elements hide its own properties). The loader and the widget
 * must still find our origin through their own script tag, so no request, question or event goes
 * to the image's origin.
 */
import assert from "node:assert/strict";
import { serveLocal } from "../_browser.ts";
import { openSharedBrowser, widgetWorld } from "./_browser_world.ts";

const W = "ask-ai-widget";

Deno.test({
  name:
    "widget in Chromium: an <img name=currentScript> on the page does not move the loader or the widget to its origin",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using world = await widgetWorld();
    await using b = await openSharedBrowser("widget clobber");
    const page = b.page;
    // The publisher's page and the attacker's server, both real local servers.
    await using site = serveLocal();
    await using attacker = serveLocal();
    const evil = attacker.url;
    const patched = await world.w.app.request(`${world.serviceUrl}/v1/widgets/${world.widgetId}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${world.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ allowed_origins: [world.siteUrl, site.url] }),
    });
    assert.equal(patched.status, 200);
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
    await b.shot("clobbered page");
    const title = await page.$eval(W, (e) => e.shadowRoot?.querySelector("h2")?.textContent ?? null).catch(() => null);
    assert.deepEqual(toEvil, [], "nothing is requested from the clobbering image's origin");
    assert.equal(await page.$eval(W, (e) => e.getAttribute("data-state")), "ready", "the widget draws");
    assert.notEqual(title, "Log in again to keep reading");
    // The configuration and the widget script came from the service, once each.
    assert.equal(world.seen.filter((s) => s.method === "GET" && s.path.endsWith("/config")).length, 1);
  },
});
