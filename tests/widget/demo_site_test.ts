import assert from "node:assert/strict";
import { parseConfig } from "../../core/config.ts";
import { demoSiteHandler } from "../../fixtures/demo_site.ts";

const site = demoSiteHandler({ serviceUrl: "http://127.0.0.1:8000", widgetId: "wd_demo1" });

Deno.test("demo site: the article embeds the loader inline in a reserved slot, under a strict CSP", async () => {
  const res = site(new Request("http://127.0.0.1:8001/"));
  assert.equal(res.status, 200);
  const csp = res.headers.get("content-security-policy")!;
  assert.match(csp, /script-src http:\/\/127\.0\.0\.1:8000(;|$)/);
  assert.match(csp, /connect-src http:\/\/127\.0\.0\.1:8000(;|$)/);
  assert.match(csp, /default-src 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  const html = await res.text();
  assert.match(html, /<div id="ask-ai-slot"><\/div>/);
  assert.match(
    html,
    /<script src="http:\/\/127\.0\.0\.1:8000\/widget\/v1\/loader\.js" data-widget-id="wd_demo1" data-target="#ask-ai-slot"/,
  );
  assert.doesNotMatch(html, /<script>|<style>| style="/, "nothing inline");
  assert.match(await site(new Request("http://127.0.0.1:8001/site.css")).text(), /#ask-ai-slot\{[^}]*min-height/);
});

Deno.test("demo site: /docked.html docks the widget; ?no-track adds data-no-track; an icon; other paths 404, POST 405", async () => {
  const docked = await site(new Request("http://127.0.0.1:8001/docked.html")).text();
  assert.match(docked, /mode="docked"/);
  assert.doesNotMatch(docked, /ask-ai-slot"/);
  assert.match(await site(new Request("http://127.0.0.1:8001/?no-track")).text(), /data-no-track/);
  assert.equal(site(new Request("http://127.0.0.1:8001/nope")).status, 404);
  assert.match(docked, /<link rel="icon" href="\/favicon\.svg"/);
  for (const icon of ["/favicon.svg", "/favicon.ico"]) {
    const res = site(new Request(`http://127.0.0.1:8001${icon}`));
    assert.equal(res.status, 200, icon);
    assert.equal(res.headers.get("content-type"), "image/svg+xml", icon);
    assert.match(await res.text(), /^<svg /, icon);
  }
  assert.equal(site(new Request("http://127.0.0.1:8001/", { method: "POST" })).status, 405);
});

Deno.test("DEMO_SITE_URL: an origin by default, off turns the demo site off, a non-URL is refused", () => {
  assert.equal(parseConfig({}).demoSiteUrl, "http://127.0.0.1:8001");
  assert.equal(parseConfig({ DEMO_SITE_URL: "http://localhost:9001/path" }).demoSiteUrl, "http://localhost:9001");
  assert.equal(parseConfig({ DEMO_SITE_URL: "off" }).demoSiteUrl, null);
  assert.throws(() => parseConfig({ DEMO_SITE_URL: "ftp://x" }));
});
