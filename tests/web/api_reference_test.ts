import assert from "node:assert/strict";
import { createTestWorld } from "../_helpers.ts";
import { openBrowser, serveLocal } from "../_browser.ts";
import { pageFaults } from "../_axe.ts";

Deno.test("GET /docs serves Swagger UI from this server under a CSP of scripts from this origin only", async () => {
  await using w = await createTestWorld();
  const res = await w.app.request("/docs");
  assert.equal(res.status, 200);
  const csp = res.headers.get("content-security-policy")!;
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  const page = await res.text();
  const scripts = [...page.matchAll(/<script([^>]*)>/g)].map((m) => m[1]);
  assert.equal(scripts.length, 2);
  for (const attrs of scripts) assert.match(attrs, /src="\/docs\/assets\/[\w.-]+\.js\?v=[0-9a-f]{16}"/);
  assert.doesNotMatch(page, /(src|href)="https?:/, "nothing from another origin");
  const bundle = page.match(/src="(\/docs\/assets\/swagger-ui-bundle\.js\?v=[0-9a-f]+)"/)![1];
  const asset = await w.app.request(bundle, { headers: { "accept-encoding": "gzip" } });
  assert.equal(asset.status, 200);
  assert.equal(asset.headers.get("content-encoding"), "gzip");
  assert.match(asset.headers.get("cache-control")!, /immutable/);
  await asset.body?.cancel();
  assert.equal((await w.app.request("/docs/assets/nope.js")).status, 404);
});

Deno.test("/openapi-3.0.json, which /docs draws, holds the same operations as /openapi.json; both gzip and revalidate", async () => {
  await using w = await createTestWorld();
  const ops = (doc: { paths: Record<string, Record<string, unknown>> }) =>
    Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m} ${path}`)).sort();
  const v31 = await w.app.request("/openapi.json", { headers: { "accept-encoding": "gzip" } });
  assert.equal(v31.headers.get("content-encoding"), "gzip");
  const etag = v31.headers.get("etag")!;
  const doc31 = await new Response(v31.body!.pipeThrough(new DecompressionStream("gzip"))).json();
  const doc30 = await (await w.app.request("/openapi-3.0.json")).json();
  assert.equal(doc31.openapi, "3.1.0");
  assert.match(doc30.openapi, /^3\.0\./);
  assert.deepEqual(ops(doc30), ops(doc31));
  assert.equal((await w.app.request("/openapi.json", { headers: { "if-none-match": etag } })).status, 304);
});

Deno.test("/docs in Chromium: every route, Markdown, try it with a typed key, keyboard only, 0 serious axe faults", async (t) => {
  await using w = await createTestWorld();
  const { key } = await w.tenantWithKey("Docs Reader");
  await using server = serveLocal();
  server.setHandler(w.app.fetch);
  const doc = await (await w.app.request("/openapi.json")).json();
  await using session = await openBrowser("api-reference");
  const { page } = session;
  const problems: string[] = [];
  page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
  page.on("pageerror", (e) => problems.push(String(e)));
  const elsewhere: string[] = [];
  page.on("request", (r) => {
    const u = r.url();
    if (!u.startsWith(server.url) && !u.startsWith("data:")) elsewhere.push(u);
  });
  await page.setViewport({ width: 1280, height: 900 });

  await t.step("every documented operation is listed", async () => {
    await page.goto(`${server.url}/docs`, { waitUntil: "domcontentloaded" });
    await page.waitForSelector("#operations .opblock", { timeout: 30_000 });
    const shown = new Set(
      await page.$$eval(".opblock", (ops) =>
        ops.map((op) => {
          const method = op.querySelector(".opblock-summary-method")?.textContent?.toLowerCase();
          const path = op.querySelector(".opblock-summary-path")?.getAttribute("data-path");
          return `${method} ${path}`;
        })),
    );
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item)) assert.ok(shown.has(`${method} ${path}`), `${method} ${path}`);
    }
    // The first screen: the whole list is 11,000 px tall (asserted above, and 0.4 s of CPU to take).
    console.log(`screenshot: ${await session.screen("docs 1280")}`);
  });

  await t.step("Markdown in a description is rendered, not shown with its backticks", async () => {
    await page.click(".opblock-get .opblock-summary-path[data-path='/'] ");
    await page.waitForSelector(".opblock.is-open .renderedMarkdown code");
    const codes = await page.$$eval(".opblock.is-open .renderedMarkdown code", (cs) => cs.map((c) => c.textContent));
    assert.ok(codes.includes("Accept"), codes.join());
    const text = await page.$eval(".opblock.is-open .renderedMarkdown", (e) => e.textContent ?? "");
    assert.doesNotMatch(text, /`/);
  });

  await t.step("keyboard only: open /healthz, Try it out, Execute, read the answer", async () => {
    await page.focus(".opblock-get:has(.opblock-summary-path[data-path='/healthz']) .opblock-summary-control");
    await page.keyboard.press("Enter");
    const op = ".opblock.is-open:has(.opblock-summary-path[data-path='/healthz'])";
    await page.waitForSelector(`${op} .try-out__btn`);
    await page.focus(`${op} .try-out__btn`);
    await page.keyboard.press("Enter");
    await page.waitForSelector(`${op} .execute`);
    await page.focus(`${op} .execute`);
    await page.keyboard.press("Enter");
    await page.waitForSelector(`${op} .live-responses-table tbody .response-col_status`);
    const status = await page.$eval(`${op} .live-responses-table tbody .response-col_status`, (e) => e.textContent);
    assert.equal(status?.trim(), "200");
    assert.match(await page.$eval(`${op} .live-responses-table`, (e) => e.textContent ?? ""), /"status": "ok"/);
  });

  await t.step("an API key typed into Authorize calls a tenant route; it stays in the tab's memory", async () => {
    await page.click(".btn.authorize");
    await page.waitForSelector(".modal-ux input");
    const input = await page.$$(".modal-ux input");
    // Entered in one input event, as a pasted key is: typed key by key, Swagger UI drew the whole
    // page again per character (0.5 s of the browser's CPU).
    await input[0].focus();
    await page.keyboard.sendCharacter(key);
    await page.click(".modal-ux .auth-btn-wrapper .authorize");
    await page.click(".modal-ux .btn-done");
    const opSel = ".opblock-get:has(.opblock-summary-path[data-path='/v1/data-models'])";
    await page.click(`${opSel} .opblock-summary-control`);
    await page.waitForSelector(`${opSel} .try-out__btn`);
    await page.click(`${opSel} .try-out__btn`);
    await page.click(`${opSel} .execute`);
    await page.waitForSelector(`${opSel} .live-responses-table tbody .response-col_status`);
    assert.equal(
      (await page.$eval(`${opSel} .live-responses-table tbody .response-col_status`, (e) => e.textContent))?.trim(),
      "200",
    );
    const stored = await page.evaluate(() =>
      JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })
    );
    assert.ok(!stored.includes(key), "the key is not stored");
    assert.ok(!page.url().includes(key));
    // The operation tried, not the whole page (1280 x 11,000 px, unreadable at a glance and 0.5 s of CPU).
    console.log(`screenshot: ${await session.shot("docs tried", opSel)}`);
  });

  await t.step("axe: 0 serious or critical violations with operations open and answered", async () => {
    assert.deepEqual(await pageFaults(page), []);
  });

  await t.step("a 360 px phone: the page fits its width", async () => {
    await page.setViewport({ width: 360, height: 800 });
    await page.goto(`${server.url}/docs`, { waitUntil: "domcontentloaded" });
    await page.waitForSelector("#operations .opblock", { timeout: 30_000 });
    // The phone's first screen (the whole page is taller still at this width).
    console.log(`screenshot: ${await session.screen("docs 360")}`);
    const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(scrollWidth <= 360, `the page is ${scrollWidth} px wide at 360`);
    assert.deepEqual(await pageFaults(page), []);
  });

  await t.step("no script error, no CSP refusal, no request to another origin", () => {
    assert.deepEqual(problems, []);
    assert.deepEqual(elsewhere, []);
  });
});
