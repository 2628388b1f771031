/**
 * Issue 24, finding 4: every GET of a tracking link recorded a click; 300 GETs with a fake
 * `Referer` gave one article 300 clicks on 2 impressions (`"ctr": 15000`). Now a follow counts once
 * per link and address within the dedupe window, never from crawlers or link-preview fetchers,
 * never after the link's counting lifetime, and CTR is capped at what the impressions allow.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import { FixedClock } from "../../core/clock.ts";
import { SignedLinks } from "../../core/links/tracking.ts";
import { bearer, createTestWorld, type TestWorld } from "../_helpers.ts";

const article = {
  id: "ar_01JX0000000000000000000001",
  url: "https://news.example.com/2026/11/harbour",
  dataModelId: "dm_01JX0000000000000000000001",
};

/** Who served the links (a click is recorded for the serving tenant). */
const CTX = { tenantId: "tn_01JX0000000000000000000001" };

/** Article clicks waiting in the write-ahead log. */
async function clicks(w: TestWorld): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for await (const e of w.deps.kv.list<Uint8Array>({ prefix: ["ev_wal"] })) {
    for (const line of new TextDecoder().decode(e.value).split("\n").filter(Boolean)) {
      const row = JSON.parse(line);
      if (row.event_type === "click") out.push(row);
    }
  }
  return out;
}

const follow = (w: TestWorld, path: string, headers: Record<string, string> = {}) =>
  Promise.resolve(w.app.request(path, { headers: { referer: "https://forged.example/", ...headers } }));

Deno.test("GET /r/{token}: 300 GETs of one link from one address with a fake Referer count once", async () => {
  await using w = await createTestWorld();
  const path = new URL(w.deps.links.trackingUrl(article, CTX)).pathname;
  const statuses = await Promise.all(Array.from({ length: 300 }, () => follow(w, path).then((r) => r.status)));
  assert.ok(statuses.every((s) => s === 302), "every follow still redirects");
  assert.equal((await clicks(w)).length, 1);
  // Within the dedupe window (30 min) it stays one; after it, the same reader counts again.
  w.clock.advance(29 * 60_000);
  await follow(w, path);
  assert.equal((await clicks(w)).length, 1);
  w.clock.advance(2 * 60_000);
  await follow(w, path);
  assert.equal((await clicks(w)).length, 2);
});

Deno.test("GET /r/{token}: another address counts on its own; one address is limited across links", async () => {
  await using w = await createTestWorld({ env: { TRUST_PROXY: "1", CLICKS_PER_MIN_PER_ADDRESS: "5" } });
  const path = new URL(w.deps.links.trackingUrl(article, CTX)).pathname;
  await follow(w, path, { "x-forwarded-for": "203.0.113.1" });
  await follow(w, path, { "x-forwarded-for": "203.0.113.2" });
  const two = await clicks(w);
  assert.equal(two.length, 2);
  // Each click carries its reader's network key (for trending), never the address itself.
  assert.match(String(two[0]!.client_key), /^[0-9a-f]{16}$/);
  assert.notEqual(two[0]!.client_key, two[1]!.client_key);
  assert.ok(!JSON.stringify(two).includes("203.0.113."));
  // One address following many different links: only CLICKS_PER_MIN_PER_ADDRESS count per minute.
  for (let i = 0; i < 20; i++) {
    const link = new URL(w.deps.links.trackingUrl({ ...article, id: `ar_01JX00000000000000000001${i}` }, CTX));
    const res = await follow(w, link.pathname, { "x-forwarded-for": "198.51.100.9" });
    assert.equal(res.status, 302, "over the limit the reader still gets the article");
  }
  assert.equal((await clicks(w)).length, 2 + 5);
});

Deno.test("GET /r/{token}: crawlers and link-preview fetchers are redirected but not counted", async () => {
  await using w = await createTestWorld();
  const path = new URL(w.deps.links.trackingUrl(article, CTX)).pathname;
  const robots = [
    "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "Twitterbot/1.0",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
    "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
    "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
    "WhatsApp/2.23.20.0",
    "TelegramBot (like TwitterBot)",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "curl/8.5.0",
  ];
  for (const ua of robots) assert.equal((await follow(w, path, { "user-agent": ua })).status, 302, ua);
  assert.equal((await clicks(w)).length, 0);
  // A browser (headless too: people automate, and our own browser tests use it) counts.
  const browser =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0 Safari/537.36";
  await follow(w, path, { "user-agent": browser });
  assert.equal((await clicks(w)).length, 1);
});

Deno.test("GET /r/{token}: an expired link still redirects but no longer counts; old links without expiry use the TTL", async () => {
  await using w = await createTestWorld({ env: { CLICK_LINK_TTL_S: "3600" } });
  const path = new URL(w.deps.links.trackingUrl(article, CTX)).pathname;
  w.clock.advance(3_601_000);
  const res = await follow(w, path);
  assert.equal(res.status, 302);
  assert.equal(res.headers.get("location"), article.url);
  assert.equal((await clicks(w)).length, 0);
  // A link made before links carried an expiry (no `x` in its payload) counts until issue time + TTL.
  const issuedAt = Math.floor(w.clock.now().getTime() / 1000);
  const legacy = await legacyToken(w, {
    d: article.dataModelId,
    a: article.id,
    u: article.url,
    t: CTX.tenantId,
    i: issuedAt,
  });
  assert.equal((await follow(w, `/r/${legacy}`)).status, 302);
  assert.equal((await clicks(w)).length, 1, "a fresh legacy link counts");
  w.clock.advance(3_601_000);
  assert.equal((await follow(w, `/r/${legacy}`)).status, 302);
  assert.equal((await clicks(w)).length, 1, "an old legacy link redirects without counting");
});

/** A click token in the format links had before they carried an expiry, signed with the current key. */
async function legacyToken(w: TestWorld, wire: Record<string, unknown>): Promise<string> {
  const kid = (await w.deps.links.keys.list()).find((k) => k.current)!.kid;
  const stored = (await w.deps.kv.get<{ secret: string }>(["link_key", kid])).value!;
  const payload = Buffer.from(JSON.stringify(wire)).toString("base64url");
  const tag = createHmac("sha256", Buffer.from(stored.secret, "base64url")).update(`r.${kid}.${payload}`).digest()
    .subarray(0, 16).toString("base64url");
  return `${kid}.${payload}.${tag}`;
}

Deno.test("GET /v1/analytics/articles: CTR never passes 100 % (clicks beyond the impressions do not count for it)", async () => {
  await using w = await createTestWorld();
  const { tenantId, key } = await w.tenantWithKey();
  const dm = { ...article, dataModelId: "dm_01JX0000000000000000000002" };
  const base = { tenant_id: tenantId, data_model_id: dm.dataModelId, article_id: dm.id, article_url: dm.url };
  // Two impressions, then 300 recorded clicks (as if from 300 readers: the gate above stops one address).
  await w.deps.events.record([
    ...Array.from({ length: 2 }, () => ({ event_type: "result_impression", ...base, position: 1 })),
    ...Array.from({ length: 300 }, () => ({ event_type: "article_click", ...base, url: dm.url })),
  ]);
  await w.deps.events.flush();
  const res = await w.app.request("/v1/analytics/articles", { headers: bearer(key) });
  assert.equal(res.status, 200);
  const body = await res.json();
  const row = body.articles[0];
  assert.equal(row.clicks, 300);
  assert.equal(row.impressions, 2);
  assert.equal(row.ctr, 100);
  assert.equal(body.sites[0].ctr, 100);
});

Deno.test("SignedLinks: links from a deployment with a custom CLICK_LINK_TTL_S carry that expiry", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:00Z");
    const links = new SignedLinks({ kv, clock, baseUrl: "http://svc.test", clickTtlS: 120 });
    await links.init();
    const click = await links.verifyClick(new URL(links.trackingUrl(article, {})).pathname.slice(3));
    assert.equal(click!.expiresAt, click!.issuedAt + 120);
  } finally {
    kv.close();
  }
});
