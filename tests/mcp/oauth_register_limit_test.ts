/**
 * Dynamic client registration stores what it is sent for 30 days (a body of up to 16 KiB). The
 * per-minute limit alone let one address register 30 clients of ~15 KB a minute, about 20 GB of KV
 * a month: registrations now also count against a daily cap per client address.
 */
import assert from "node:assert/strict";
import { REGISTRATIONS_PER_ADDRESS_PER_DAY } from "../../core/identity/oauth_clients.ts";
import { mcpWorld } from "./_world.ts";

Deno.test("POST /oauth2/register: one client address gets a daily cap of registrations, then 429 until the next day", async () => {
  // The per-minute limit out of the way: only the daily cap is under test.
  await using w = await mcpWorld({ env: { STOREFRONT_RATE_LIMIT: "100000" } });
  const uris = Array.from({ length: 10 }, (_, i) => `https://client.example/${"p".repeat(1500)}/${i}`);
  const register = () =>
    w.app.request("http://svc.test/oauth2/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ redirect_uris: uris, client_name: "filler" }),
    });
  for (let i = 0; i < REGISTRATIONS_PER_ADDRESS_PER_DAY; i++) {
    const res = await register();
    assert.equal(res.status, 201, `registration ${i + 1}`);
    await res.body?.cancel();
  }
  const limited = await register();
  assert.equal(limited.status, 429);
  assert.equal((await limited.json()).error, "rate_limit_exceeded");
  assert.ok(Number(limited.headers.get("retry-after")) > 3600, "the cap is a day's");
  let stored = 0;
  for await (const _ of w.deps.kv.list({ prefix: ["oauth_client"] })) stored++;
  assert.equal(stored, REGISTRATIONS_PER_ADDRESS_PER_DAY);
  w.clock.advance(86_400_000);
  const nextDay = await register();
  assert.equal(nextDay.status, 201);
  await nextDay.body?.cancel();
});
