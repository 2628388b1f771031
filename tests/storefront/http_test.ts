import assert from "node:assert/strict";
import { seedDemo } from "../../fixtures/demo.ts";
import { DEMO_SELLER_ID, seedStorefront } from "../../fixtures/storefront.ts";
import { startServer } from "../../routes/server.ts";
import { createTestWorld } from "../_helpers.ts";
import { json, storefrontWorld } from "./_world.ts";

Deno.test("over real HTTP: the rate limit keys on the socket's client address", async () => {
  await using w = await storefrontWorld({ env: { STOREFRONT_RATE_LIMIT: "2" } });
  const server = startServer(w.app.fetch);
  try {
    const post = (headers: Record<string, string> = {}) =>
      fetch(`${server.url}/agent/identity`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ type: "anonymous" }),
      });
    assert.equal((await post()).status, 201);
    const second = await post();
    assert.equal(second.status, 201);
    assert.equal(second.headers.get("x-ratelimit-remaining"), "0");
    // X-Forwarded-For is not trusted without TRUST_PROXY: a spoofed address does not open a new window.
    const third = await post({ "x-forwarded-for": "203.0.113.7" });
    assert.equal(third.status, 429);
    const body = await third.json();
    assert.equal(body.error, "rate_limit_exceeded");
    assert.ok(Number(third.headers.get("retry-after")) >= 1);
    assert.equal(body.retry_after, Number(third.headers.get("retry-after")));
  } finally {
    await server.shutdown(1000);
  }
});

Deno.test("claim request: an SMTP server that cannot be reached is 503 mail_unavailable", async () => {
  // A port that was free a moment ago: nothing listens there.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  await using w = await storefrontWorld({ env: { SMTP_URL: `smtp://127.0.0.1:${port}` } });
  const reg = await json(await w.post("/agent/identity", { type: "service_auth", login_hint: "nomail@example.com" }));
  const r = await json(
    await w.post("/agent/identity/claim", {
      type: "service_auth",
      claim_token: (reg.body.claim as { token: string }).token,
      login_hint: "nomail@example.com",
    }),
  );
  assert.equal(r.status, 503);
  assert.equal(r.body.error, "mail_unavailable");
  assert.ok(w.log.lines.some((l) => l.msg === "claim e-mail not sent"));
});

Deno.test("seedDemo() with seedStorefront creates the demo seller for the demo tenant, once", async () => {
  await using w = await createTestWorld();
  const first = await seedDemo(w.deps, [seedStorefront]);
  const seller = await w.deps.storefront.sellers.get(DEMO_SELLER_ID);
  assert.equal(seller?.tenantId, first.ids.tenantId);
  assert.deepEqual(seller?.hosts, ["svc.test"]);
  await seedStorefront(w.deps, first.ids);
  assert.equal((await w.deps.storefront.sellers.list()).length, 1);
});
