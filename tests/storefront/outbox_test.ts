/** The demo's outbox page (`GET /dev/outbox`, MAIL_OUTBOX=true): it shows mail text and live codes, so it runs under the pages' CSP. */
import assert from "node:assert/strict";
import { styleHashSource } from "../../routes/inline_style.ts";
import { SF, startServiceAuthClaim, storefrontWorld } from "./_world.ts";

Deno.test("outbox page: its one style allowed by hash (no 'unsafe-inline'), no framing, on the page and its 401", async () => {
  await using w = await storefrontWorld();
  await startServiceAuthClaim(w, "outbox@example.com");
  const { key } = await w.deps.operatorKeys.create();
  const page = await w.app.request(`${SF}/dev/outbox`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(page.status, 200);
  const html = await page.text();
  const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
  const csp = page.headers.get("content-security-policy") ?? "";
  assert.ok(!csp.includes("unsafe-inline"), csp);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.ok(csp.includes(`style-src ${styleHashSource(style)}`), csp);
  assert.equal(page.headers.get("x-frame-options"), "DENY");

  const refused = await w.app.request(`${SF}/dev/outbox`);
  assert.equal(refused.status, 401);
  await refused.body?.cancel();
  assert.match(refused.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
  assert.equal(refused.headers.get("x-frame-options"), "DENY");
});
