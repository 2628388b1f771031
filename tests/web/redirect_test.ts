import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import { runAdmin } from "../../cli/commands.ts";
import { SignedLinks } from "../../core/links/tracking.ts";
import { createTestWorld, type TestWorld } from "../_helpers.ts";
import { kvFaults } from "../_kv_faults.ts";

/** The event rows the real pipeline holds in its write-ahead log (what a flush will store). */
async function recorded(w: TestWorld): Promise<Record<string, unknown>[]> {
  const chunks = await w.deps.events.wal.take(1000);
  const lines = chunks.flatMap((c) => new TextDecoder().decode(c.bytes).split("\n").filter(Boolean));
  return lines.map((line) => JSON.parse(line));
}

const article = {
  id: "ar_01JX0000000000000000000000",
  url: "https://news.example.com/2026/11/flood-barrier?ref=x",
  dataModelId: "dm_01JX0000000000000000000000",
};

Deno.test("GET /r/{token} redirects to the signed article URL and records an article_click", async () => {
  await using w = await createTestWorld();
  const link = w.deps.links.trackingUrl(article, {
    tenantId: "tn_01JX0000000000000000000000",
    caller: "payproxy:agent-7",
    requestId: "req-123",
    position: 3,
  });
  assert.ok(link.startsWith("http://svc.test/r/"), link);
  const res = await w.app.request(new URL(link).pathname, { headers: { referer: "https://news.example.com/home" } });
  assert.equal(res.status, 302);
  assert.equal(res.headers.get("location"), article.url);
  assert.equal(res.headers.get("cache-control"), "no-store");
  const events = await recorded(w);
  assert.equal(events.length, 1);
  const e = events[0]!;
  // An article_click is stored as a click of type article, its url as article_url.
  assert.equal(e.event_type, "click");
  assert.equal(e.click_type, "article");
  assert.equal(e.source, "server");
  assert.equal(e.tenant_id, "tn_01JX0000000000000000000000");
  assert.equal(e.agent_identity, "payproxy:agent-7");
  assert.equal(e.data_model_id, article.dataModelId);
  assert.equal(e.article_id, article.id);
  assert.equal(e.article_url, article.url);
  assert.equal(e.position, 3);
  assert.equal(e.referring_url, "https://news.example.com/home");
  assert.equal(e.ts_ms, Date.parse("2026-11-22T12:00:00.000Z"));
});

Deno.test("GET /r/{token} answers 404 {message} for tampered, foreign or malformed tokens", async (t) => {
  await using w = await createTestWorld();
  const token = new URL(w.deps.links.trackingUrl(article, { position: 1 })).pathname.slice(3);
  const [kid, payload, mac] = token.split(".") as [string, string, string];
  const evil = btoa(JSON.stringify({ d: article.dataModelId, a: article.id, u: "https://evil.example/", i: 0 }))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  // The last character carries 2 tag bits and 4 spare bits: changing only spare bits must fail too.
  const flip = (s: string) => s.slice(0, -1) + (s.at(-1) === "A" ? "B" : "A");
  const flipFirst = (s: string) => (s[0] === "A" ? "B" : "A") + s.slice(1);
  const cases: Record<string, string> = {
    "payload swapped for another URL": `${kid}.${evil}.${mac}`,
    "last MAC character changed": `${kid}.${payload}.${flip(mac)}`,
    "first MAC character changed": `${kid}.${payload}.${flipFirst(mac)}`,
    "MAC truncated": `${kid}.${payload}.${mac.slice(0, 10)}`,
    "unknown key id": `kZZZZZZ.${payload}.${mac}`,
    "not a token": "hello",
    "extra part": `${token}.x`,
  };
  for (const [name, bad] of Object.entries(cases)) {
    await t.step(name, async () => {
      const res = await w.app.request(`/r/${bad}`);
      assert.equal(res.status, 404);
      assert.deepEqual(await res.json(), { message: "Link not found" });
    });
  }
  await t.step("an image token is not accepted as a click token", async () => {
    const img = w.deps.links.imageUrl({ image: "https://cdn.example.com/a.jpg" })!;
    const res = await w.app.request(`/r/${new URL(img).searchParams.get("src")}`);
    assert.equal(res.status, 404);
  });
  await t.step("a token signed by another deployment's key is refused", async () => {
    const kv = await Deno.openKv(":memory:");
    try {
      const other = new SignedLinks({ kv, clock: w.clock, baseUrl: "http://svc.test" });
      await other.init();
      const res = await w.app.request(new URL(other.trackingUrl(article, {})).pathname);
      assert.equal(res.status, 404);
    } finally {
      kv.close();
    }
  });
  assert.deepEqual(await recorded(w), [], "nothing recorded for refused tokens");
});

Deno.test("GET /r/{token} still redirects when the click cannot be recorded, and HEAD records nothing", async () => {
  await using w = await createTestWorld();
  const path = new URL(w.deps.links.trackingUrl(article, {})).pathname;
  const head = await w.app.request(path, { method: "HEAD" });
  assert.equal(head.status, 302);
  assert.deepEqual(await recorded(w), []);
  // The event log cannot take the click (KV is gone): the reader still gets the article.
  w.deps.kv.close();
  const res = await w.app.request(path);
  assert.equal(res.status, 302);
  assert.equal(res.headers.get("location"), article.url);
  assert.ok(w.log.lines.some((l) => l.msg === "article_click not recorded"));
});

Deno.test("GET /r/{token}: a click whose event failed to commit is counted when the reader follows the link again", async () => {
  const faults = kvFaults();
  await using w = await createTestWorld({ wrapKv: faults.wrap });
  const path = new URL(w.deps.links.trackingUrl(article, { tenantId: "tn_01JX0000000000000000000000", position: 1 }))
    .pathname;
  // The click passes the dedupe; the write-ahead log's commit of its event fails once.
  faults.failNext(1, { op: "set", entity: "ev_wal" });
  const first = await w.app.request(path);
  assert.equal(first.status, 302);
  assert.equal(faults.left, 0, "the event's commit failed");
  assert.deepEqual(await recorded(w), []);
  // The same reader follows again: the click is stored once, not taken for a duplicate of one never stored.
  const again = await w.app.request(path);
  assert.equal(again.status, 302);
  assert.equal((await recorded(w)).length, 1);
  const third = await w.app.request(path);
  assert.equal(third.status, 302);
  assert.equal((await recorded(w)).length, 1, "a real repeat is still a duplicate");
});

Deno.test("link-key rotate: new links use the new key and old links keep working", async () => {
  await using w = await createTestWorld();
  const before = w.deps.links.trackingUrl(article, {});
  const rotated = await runAdmin(w.deps, ["link-key", "rotate"]) as { kid: string };
  const after = w.deps.links.trackingUrl(article, {});
  assert.ok(new URL(after).pathname.slice(3).startsWith(`${rotated.kid}.`));
  for (const link of [before, after]) assert.equal((await w.app.request(new URL(link).pathname)).status, 302);
  const keys = await runAdmin(w.deps, ["link-key", "list"]) as { kid: string; current: boolean }[];
  assert.equal(keys.length, 2);
  assert.deepEqual(keys.filter((k) => k.current).map((k) => k.kid), [rotated.kid]);
});

Deno.test("link-key rotate in another process (the admin CLI): a serving process signs with the new key within a minute", async () => {
  await using w = await createTestWorld();
  // w.deps plays the admin CLI; `serving` is a server process on the same KV.
  const serving = new SignedLinks({ kv: w.deps.kv, clock: w.clock, baseUrl: "http://svc.test" });
  await serving.init();
  const kidOf = (link: string) => new URL(link).pathname.slice(3).split(".")[0];
  const before = kidOf(serving.trackingUrl(article, {}));
  const rotated = await runAdmin(w.deps, ["link-key", "rotate"]) as { kid: string };
  w.clock.advance(30_000);
  assert.equal(kidOf(serving.trackingUrl(article, {})), before, "within the minute the old key may still sign");
  w.clock.advance(30_000);
  serving.trackingUrl(article, {}); // notices the minute has passed and reloads the keys
  await serving.keys.refresh();
  const after = serving.trackingUrl(article, {});
  assert.equal(kidOf(after), rotated.kid);
  assert.equal(
    serving.imageUrl({ image: "https://cdn.example.com/p.jpg" })!.split("src=")[1]!.split(".")[0],
    rotated.kid,
  );
  assert.equal((await w.app.request(new URL(after).pathname)).status, 302, "the CLI's side verifies it");
});

Deno.test("SignedLinks.init() creates one key however many processes start at once", async () => {
  await using w = await createTestWorld();
  const kv = w.deps.kv;
  const a = new SignedLinks({ kv, clock: w.clock, baseUrl: "http://svc.test" });
  const b = new SignedLinks({ kv, clock: w.clock, baseUrl: "http://svc.test" });
  await Promise.all([a.init(), b.init()]);
  assert.equal((await a.keys.list()).length, 1);
  // A link from one process verifies in the other.
  assert.ok(await b.verifyClick(new URL(a.trackingUrl(article, {})).pathname.slice(3)));
});

Deno.test("SignedLinks.imageUrl() has a query string ready for &w=&h= and skips non-http images", async () => {
  await using w = await createTestWorld();
  const url = w.deps.links.imageUrl({ image: "https://cdn.example.com/photo.jpg" })!;
  assert.match(url, /^http:\/\/svc\.test\/img\?src=[\w.-]+$/);
  const resized = new URL(`${url}&w=320&h=180`);
  assert.equal(resized.searchParams.get("w"), "320");
  assert.equal(resized.searchParams.get("h"), "180");
  assert.equal(w.deps.links.imageUrl({}), undefined);
  assert.equal(w.deps.links.imageUrl({ image: "javascript:alert(1)" }), undefined);
  assert.equal(w.deps.links.imageUrl({ image: "data:image/png;base64,AAAA" }), undefined);
});

Deno.test("SignedLinks tokens carry a standard HMAC-SHA256 tag (first 16 bytes) over purpose.kid.payload", async () => {
  await using w = await createTestWorld();
  const token = new URL(w.deps.links.trackingUrl(article, { position: 2 })).pathname.slice(3);
  const [kid, payload, tag] = token.split(".") as [string, string, string];
  const stored = (await w.deps.kv.get<{ secret: string }>(["link_key", kid])).value!;
  const secret = Buffer.from(stored.secret, "base64url");
  const want = createHmac("sha256", secret).update(`r.${kid}.${payload}`).digest().subarray(0, 16).toString(
    "base64url",
  );
  assert.equal(tag, want);
  assert.deepEqual(JSON.parse(Buffer.from(payload, "base64url").toString()), {
    d: article.dataModelId,
    a: article.id,
    u: article.url,
    p: 2,
    i: 1795348800,
    // Counts clicks for CLICK_LINK_TTL_S (default 7 days) after it was made.
    x: 1795348800 + 7 * 86_400,
  });
});

Deno.test("GET /r/{token} percent-encodes a non-ASCII article URL in Location", async () => {
  await using w = await createTestWorld();
  const link = w.deps.links.trackingUrl({ ...article, url: "https://news.example.com/café/über?q=ñ" }, {});
  const res = await w.app.request(new URL(link).pathname);
  assert.equal(res.status, 302);
  assert.equal(res.headers.get("location"), "https://news.example.com/caf%C3%A9/%C3%BCber?q=%C3%B1");
});

/** The shape the search engine hands in: a card without its data model, which comes in the context. */
interface CardLike {
  id: string;
  url: string;
  title: string;
  image?: string;
  summary: string;
}

Deno.test("SignedLinks takes the data model from the context when the article does not carry it", async () => {
  await using w = await createTestWorld();
  const card: CardLike = {
    id: "ar_9",
    url: "https://news.example.com/x",
    title: "X",
    summary: "",
    image: "https://cdn.example.com/x.png",
  };
  const link = w.deps.links.trackingUrl(card, { dataModelId: "dm_9", query: "x", position: 1 });
  assert.equal((await w.deps.links.verifyClick(new URL(link).pathname.slice(3)))?.dataModelId, "dm_9");
  assert.ok(w.deps.links.imageUrl(card));
  assert.throws(() => w.deps.links.trackingUrl(card, {}), /data model id/);
});

Deno.test("SignedLinks: any link it signs verifies, whatever the context carries", async () => {
  await using w = await createTestWorld();
  const link = w.deps.links.trackingUrl(article, {
    tenantId: "t".repeat(500),
    caller: "payproxy:" + "a".repeat(1000),
    requestId: "r".repeat(1000),
    position: 1e9,
  });
  const click = await w.deps.links.verifyClick(new URL(link).pathname.slice(3));
  assert.ok(click);
  assert.equal(click.position, 100_000);
  assert.equal(click.caller?.length, 256);
});
