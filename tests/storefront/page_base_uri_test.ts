/** The human pages' CSP: `default-src` does not cover `base-uri` or `form-action`, so each page names them. */
import assert from "node:assert/strict";
import { SF, startServiceAuthClaim, storefrontWorld } from "./_world.ts";

Deno.test("human pages: claim, checkout, consent and outbox pages refuse an injected <base> (base-uri 'none')", async () => {
  await using w = await storefrontWorld();
  const { verificationUri } = await startServiceAuthClaim(w, "base@example.com");
  const { key } = await w.deps.operatorKeys.create();
  const pages: [string, RequestInit?][] = [
    [verificationUri],
    [`${SF}/checkout/unknown_reference_0001`],
    [`${SF}/oauth2/authorize`],
    [`${SF}/dev/outbox`, { headers: { authorization: `Bearer ${key}` } }],
  ];
  for (const [url, init] of pages) {
    const res = await w.app.request(url, init);
    await res.body?.cancel();
    const csp = res.headers.get("content-security-policy") ?? "";
    assert.match(csp, /(^|; )base-uri 'none'(;|$)/, `${url}: ${csp}`);
    assert.match(csp, /(^|; )form-action '(self|none)'/, `${url}: ${csp}`);
  }
});
