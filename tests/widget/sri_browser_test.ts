/**
 * Subresource Integrity on the widget script the loader injects: the loader names the SHA-384 of
 * the exact bytes the asset route serves, and headless Chromium runs the widget with them and
 * refuses a changed copy (the widget does not start).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createTestWorld } from "../_helpers.ts";
import { openSharedBrowser, widgetWorld } from "./_browser_world.ts";

const INTEGRITY_RE = /sha384-[A-Za-z0-9+/]+=*/;

Deno.test("GET /widget/v1/loader.js names the sha384 integrity of the exact widget script served, which answers CORS", async () => {
  await using w = await createTestWorld();
  const loader = await (await w.app.request("/widget/v1/loader.js")).text();
  assert.ok(!loader.includes("__ASK_AI_WIDGET_INTEGRITY__"));
  const named = loader.match(INTEGRITY_RE)?.[0];
  const path = loader.match(/\/widget\/v1\/assets\/widget\.[0-9a-f]{16}\.js/)![0];
  const res = await w.app.request(path, { headers: { origin: "https://news.example" } });
  assert.equal(res.headers.get("access-control-allow-origin"), "*", "a CORS response, so browsers can check it");
  const bytes = new Uint8Array(await res.arrayBuffer());
  assert.equal(named, `sha384-${createHash("sha384").update(bytes).digest("base64")}`);
});

Deno.test({
  name: "widget SRI in Chromium: the loader's script runs with its built bytes, and a changed copy is refused",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    await using world = await widgetWorld();
    await using b = await openSharedBrowser("widget sri");
    const page = b.page;
    // Each load fetches the script again (the world's asset is immutable and would be cached).
    await page.setCacheEnabled(false);
    await page.evaluateOnNewDocument(`globalThis.cspViolations = [];
      globalThis.widgetScriptFailed = false;
      document.addEventListener("securitypolicyviolation", (e) => {
        globalThis.cspViolations.push(e.violatedDirective + " " + e.blockedURI);
      });
      document.addEventListener("error", (e) => {
        if (e.target instanceof HTMLScriptElement && e.target.hasAttribute("data-ask-ai-widget")) {
          globalThis.widgetScriptFailed = true;
        }
      }, true);`);
    const assetsServed = () => world.seen.filter((s) => s.path.startsWith("/widget/v1/assets/") && s.status === 200);

    await t.step("the built script: integrity and crossorigin on the injected tag, the widget starts", async () => {
      await page.goto(world.siteUrl, { waitUntil: "load" });
      await page.waitForSelector("ask-ai-widget[data-state=ready]");
      const tag = await page.$eval("script[data-ask-ai-widget]", (s) => ({
        integrity: s.getAttribute("integrity") ?? "",
        crossorigin: s.getAttribute("crossorigin"),
      }));
      assert.match(tag.integrity, new RegExp(`^${INTEGRITY_RE.source}$`));
      assert.equal(tag.crossorigin, "anonymous");
      assert.deepEqual(await page.evaluate("globalThis.cspViolations"), [], "the strict demo CSP still holds");
    });

    await t.step("a changed copy of the script is refused: the widget does not start", async () => {
      world.tamperWidgetScript(true);
      const before = assetsServed().length;
      await page.goto(world.siteUrl, { waitUntil: "load" });
      await page.waitForFunction("globalThis.widgetScriptFailed === true");
      assert.equal(assetsServed().length, before + 1, "the browser received the changed copy");
      assert.equal(await page.evaluate(`customElements.get("ask-ai-widget") === undefined`), true);
      assert.equal(await page.$("ask-ai-widget[data-state]"), null, "the element never started");
      world.tamperWidgetScript(false);
    });
  },
});
