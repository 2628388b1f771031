/**
 * Round 7: with TRUST_PROXY set, the trusted `X-Forwarded-For` hop became the client address as
 * written. A client reaching the service directly (or through a proxy that passes the header on)
 * sent a 60 KB hop; the address went into KV keys (rate limits, click dedupe) past KV's key size
 * and every rate-limited public route answered 500 (a click was silently lost). The attributed
 * address is now always an IP literal, else the socket's peer, else `unknown`.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { newId } from "../../core/ids.ts";
import type { Widget } from "../../core/store/models.ts";
import { clientAddress } from "../../routes/storefront/client_address.ts";
import { SF, storefrontWorld } from "../storefront/_world.ts";

const HUGE = "1".repeat(60_000);

/** Article clicks waiting in the write-ahead log. */
async function clicksLogged(kv: Deno.Kv): Promise<number> {
  let clicks = 0;
  for await (const e of kv.list<Uint8Array>({ prefix: ["ev_wal"] })) {
    clicks += new TextDecoder().decode(e.value).split("\n").filter((line) => line.includes('"click"')).length;
  }
  return clicks;
}

Deno.test("clientAddress(): the trusted hop counts only as an IP literal, else the socket peer, else unknown", async () => {
  const app = new Hono();
  app.get("/", (c) => c.text(clientAddress(c, 1)));
  const seen = async (xff: string, remoteAddr?: { hostname: string }) =>
    await (await app.request("/", { headers: { "x-forwarded-for": xff } }, remoteAddr ? { remoteAddr } : {})).text();
  assert.equal(await seen("10.0.0.1, 203.0.113.7"), "203.0.113.7");
  assert.equal(await seen("203.0.113.7:50001"), "203.0.113.7");
  assert.equal(await seen("[2001:db8::1]:50001"), "2001:db8::1");
  assert.equal(await seen("fe80::1%eth0"), "fe80::1", "an IPv6 zone names the proxy's interface, not a client");
  assert.equal(await seen(`fe80::1%${HUGE}`), "fe80::1");
  assert.equal(await seen(HUGE), "unknown");
  assert.equal(await seen(`203.0.113.7, ${HUGE}`), "unknown", "a left entry is the client's claim, never trusted");
  assert.equal(await seen("not-an-ip"), "unknown");
  assert.equal(await seen("999.1.1.1"), "unknown");
  assert.equal(await seen("<script>", { hostname: "198.51.100.4" }), "198.51.100.4", "the socket's peer");
});

Deno.test("attack: a 60 KB X-Forwarded-For hop behind TRUST_PROXY is answered as from the fallback address by every rate-limited public route family, never 500", async () => {
  // A closed port: an image render is attempted (after its limit) and fails fast.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = (probe.addr as Deno.NetAddr).port;
  probe.close();
  await using w = await storefrontWorld({ env: { TRUST_PROXY: "1", ALLOW_PRIVATE_URLS: "true" } });
  const { tenantId } = await w.tenantWithKey("Widget Tenant");
  const widget: Widget = {
    id: newId("wd", w.clock),
    tenantId,
    name: "Ask AI",
    aiModelId: "am_01JX0000000000000000000001",
    allowedOrigins: ["https://news.example"],
    deploymentType: "embed",
    createdAt: w.clock.now().toISOString(),
  };
  await w.deps.repos.widgets.create(widget);
  const article = {
    id: "ar_01JX0000000000000000000001",
    url: "https://news.example.com/2026/11/harbour",
    dataModelId: "dm_01JX0000000000000000000001",
  };
  const click = new URL(w.deps.links.trackingUrl(article, { tenantId })).pathname;
  const image = new URL(w.deps.links.imageUrl({ image: `http://127.0.0.1:${closedPort}/photo.jpg` })!);
  const json = (body: unknown) => ({
    method: "POST",
    headers: { "content-type": "application/json", origin: "https://news.example" },
    body: JSON.stringify(body),
  });
  const form = (fields: Record<string, string>) => ({
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
  const families: [string, string, RequestInit][] = [
    ["events", "/v1/events", json({ widget_id: widget.id, events: [{ event_type: "widget_load", session_id: "s1" }] })],
    ["click redirect", click, { method: "GET" }],
    ["image", `${image.pathname}${image.search}`, { method: "GET" }],
    ["widget", `/widget/v1/${widget.id}/config`, { method: "GET", headers: { origin: "https://news.example" } }],
    ["agent identity", `${SF}/agent/identity`, json({ type: "anonymous" })],
    [
      "token",
      `${SF}/oauth2/token`,
      form({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion: "x" }),
    ],
    ["client registration", `${SF}/oauth2/register`, json({ redirect_uris: ["http://127.0.0.1:9/cb"] })],
    ["consent page", `${SF}/oauth2/authorize?client_id=unknown`, { method: "GET" }],
    ["public reads", `${SF}/services`, { method: "GET" }],
    ["llms.txt", `${SF}/llms.txt`, { method: "GET" }],
    ["payment status", `${SF}/payments/ref_unknown_0000000000`, { method: "GET" }],
    ["checkout page", `${SF}/checkout/ref_unknown_0000000000`, { method: "GET" }],
    ["purchase", `${SF}/plans/unknown/purchase`, json({})],
  ];
  // A reader's click behind the hostile header is still counted (it was lost to the KV error).
  assert.equal((await w.app.request(click, { headers: { "x-forwarded-for": HUGE } })).status, 302);
  assert.equal(await clicksLogged(w.deps.kv), 1);
  const hostile: Record<string, number> = {};
  const plain: Record<string, number> = {};
  for (const [family, path, init] of families) {
    const send = async (xff?: string) => {
      const headers = new Headers(init.headers);
      if (xff) headers.set("x-forwarded-for", xff);
      const res = await w.app.request(path, { ...init, headers });
      await res.body?.cancel();
      return res.status;
    };
    hostile[family] = await send(HUGE);
    plain[family] = await send();
  }
  // Each answered as a request with no forwarded address (app.request has no socket peer).
  assert.deepEqual(hostile, plain);
  assert.ok(!Object.values(hostile).includes(500));
});
