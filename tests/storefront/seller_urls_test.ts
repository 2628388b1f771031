/**
 * A seller's storefront base URL comes from configuration only (AGENT_AUTH_URL, the default seller,
 * the seller's hosts), never from the request's Host; the claim link a seller's human is mailed
 * is built on it.
 */
import assert from "node:assert/strict";
import { sellerBaseUrl } from "../../core/identity/mod.ts";
import { decideOnPage, json, SF, storefrontWorld } from "./_world.ts";

Deno.test("sellerBaseUrl(): AGENT_AUTH_URL for the default seller, a hostless one or one on its host; else its first host", () => {
  const config = { agentAuthUrl: "https://store.example", defaultSellerId: "demo" };
  const seller = (sellerId: string, hosts: string[]) => ({ sellerId, hosts });
  // The default seller keeps AGENT_AUTH_URL even when its own hosts are elsewhere.
  assert.equal(sellerBaseUrl(seller("demo", ["demo.example"]), config), "https://store.example");
  assert.equal(sellerBaseUrl(seller("acme", []), config), "https://store.example");
  assert.equal(sellerBaseUrl(seller("acme", ["acme.example", "store.example"]), config), "https://store.example");
  assert.equal(sellerBaseUrl(seller("acme", ["acme.example", "www.acme.example"]), config), "https://acme.example");
  assert.equal(sellerBaseUrl(seller("acme", ["acme.example:8443"]), config), "https://acme.example:8443");
  // AGENT_AUTH_URL's scheme and path prefix carry over; its default port is no host of its own.
  const prefixed = { agentAuthUrl: "http://127.0.0.1:8000/store", defaultSellerId: null };
  assert.equal(sellerBaseUrl(seller("acme", ["acme.test"]), prefixed), "http://acme.test/store");
  assert.equal(sellerBaseUrl(seller("acme", ["127.0.0.1:8000"]), prefixed), "http://127.0.0.1:8000/store");
  assert.equal(
    sellerBaseUrl(seller("acme", ["store.example"]), {
      agentAuthUrl: "https://store.example:443",
      defaultSellerId: null,
    }),
    "https://store.example:443",
  );
});

Deno.test("claim link: a human claiming at a seller on its own host is mailed a claim page on that host, which works there", async () => {
  await using w = await storefrontWorld();
  const { tenantId } = await w.tenantWithKey("Beta Media");
  await w.deps.storefront.sellers.create({ sellerId: "beta", tenantId, name: "Beta Media", hosts: ["beta.test"] });
  const post = (path: string, body: unknown) =>
    w.app.request(`http://beta.test${path}`, {
      method: "POST",
      headers: { host: "beta.test", "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const email = "grace@example.com";
  const reg = await json(await post("/agent/identity", { type: "service_auth", login_hint: email }));
  assert.equal(reg.status, 200);
  const claimToken = (reg.body.claim as { token: string }).token;
  const req = await json(
    await post("/agent/identity/claim", { type: "service_auth", claim_token: claimToken, login_hint: email }),
  );
  assert.equal(req.status, 200);
  const uri = (req.body.claim as { attempt: { verification_uri: string } }).attempt.verification_uri;
  assert.match(uri, /^http:\/\/beta\.test\/claim\/[A-Za-z0-9_-]+$/);
  const page = await decideOnPage(w, uri, "confirm");
  assert.equal(page.status, 200);
  assert.ok(page.userCode);

  // The default seller (the demo, on AGENT_AUTH_URL) still mails links on AGENT_AUTH_URL.
  const demo = await json(await w.post("/agent/identity", { type: "service_auth", login_hint: "ada@example.com" }));
  const demoReq = await json(
    await w.post("/agent/identity/claim", {
      type: "service_auth",
      claim_token: (demo.body.claim as { token: string }).token,
      login_hint: "ada@example.com",
    }),
  );
  const demoUri = (demoReq.body.claim as { attempt: { verification_uri: string } }).attempt.verification_uri;
  assert.ok(demoUri.startsWith(`${SF}/claim/`), demoUri);
});
