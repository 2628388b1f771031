import assert from "node:assert/strict";
import { feedServer, LONG, rss, xml } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";

const redirect = (to: string) => () => new Response(null, { status: 302, headers: { location: to } });

Deno.test("poller: a feed redirecting to a blocked address is refused, with or without allowPrivate", async (t) => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route("/ok.xml", () => xml(rss([{ link: feed.url("/a/1"), title: "Fine", content: LONG("fine") }])));
  const attacks: [string, string, "private_ok" | "strict"][] = [
    ["metadata IPv4 (allowPrivate on)", "http://169.254.169.254/latest/meta-data/", "private_ok"],
    ["metadata host name (allowPrivate on)", "http://metadata.google.internal/computeMetadata/v1/", "private_ok"],
    ["IPv4-mapped IPv6 metadata (allowPrivate on)", "http://[::ffff:169.254.169.254]/", "private_ok"],
    ["unspecified address (allowPrivate on)", "http://0.0.0.0:80/", "private_ok"],
    ["RFC 1918 (allowPrivate off)", "http://10.0.0.1/feed.xml", "strict"],
    ["hex-encoded private IPv4 (allowPrivate off)", "http://0x0a000001/feed.xml", "strict"],
    ["decimal-encoded loopback alias (allowPrivate off)", "http://2130706434/feed.xml", "strict"],
    ["IPv6 loopback (allowPrivate off)", "http://[::1]/feed.xml", "strict"],
    ["non-http scheme", "file:///etc/passwd", "private_ok"],
    ["credentials in the URL", "http://user:pw@127.0.0.1/feed.xml", "private_ok"],
  ];
  let accepted = 0;
  for (const [i, [name, target, mode]] of attacks.entries()) {
    await t.step(name, async () => {
      const path = `/evil/${i}.xml`;
      // Registration sees a good feed; the redirect appears later (a source turning hostile).
      feed.route(path, () => xml(rss([{ link: feed.url("/a/1"), title: "Fine", content: LONG("fine") }])));
      const added = await w.addSource({ type: "rss", url: feed.url(path) });
      assert.equal(added.status, 201);
      feed.route(path, redirect(target));
      const fetcher = mode === "strict" ? w.strictFetcher() : w.deps.safeFetch;
      const [o] = await w.poller({ fetcher }).tick();
      assert.equal(o!.status, "error", `${name} must be refused`);
      if (o!.status !== "error") accepted++;
      assert.match(o!.error!, /blocked address|absolute http or https URL|must not contain credentials/);
      assert.ok(!o!.error!.includes(target), "the refusal does not echo the target");
      await w.api(`/sources/${added.json.id}`, { method: "DELETE" });
    });
  }
  assert.equal(accepted, 0);
});

Deno.test("POST sources refuses blocked, unreachable and unreadable URLs with a clear 422", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route("/page.html", () => new Response("<html></html>", { headers: { "content-type": "text/html" } }));
  feed.route("/bad.xml", () => xml("<html><body>not a feed</body></html>"));
  feed.route("/bad-map.xml", () => xml("<html><body>not a sitemap</body></html>", { "content-type": "text/xml" }));
  feed.route("/gone.xml", () => new Response("no", { status: 500 }));
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{ type: "rss", url: "http://169.254.169.254/latest/" }, "url_blocked", /blocked address/],
    [{ type: "rss", url: "http://metadata.google.internal/" }, "url_blocked", /blocked address/],
    [{ type: "rss", url: "ftp://example.com/feed" }, "invalid_request", /absolute http or https URL/],
    [{ type: "rss", url: feed.url("/gone.xml") }, "source_unreachable", /status 500/],
    [{ type: "rss", url: feed.url("/page.html") }, "source_unreachable", /unsupported content type/],
    [{ type: "rss", url: feed.url("/bad.xml") }, "source_unreadable", /not an RSS or Atom feed/],
    [{ type: "sitemap", url: feed.url("/bad-map.xml") }, "source_unreadable", /not an XML sitemap/],
  ];
  for (const [body, _code, message] of cases) {
    const res = await w.addSource(body);
    assert.equal(res.status, 422, JSON.stringify(res.json));
    assert.match(res.json.message, message);
  }
  // Without allowPrivate (production), loopback itself is refused at registration.
  await using prod = await sourcesWorld({ ALLOW_PRIVATE_URLS: "false" });
  const res = await prod.addSource({ type: "rss", url: feed.url("/bad.xml") });
  assert.equal(res.status, 422);
  assert.equal(res.json.message, "url could not be used as a source: URL points to a blocked address");
});

Deno.test("poller: article pages at blocked addresses are not fetched; an oversized feed is refused", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route(
    "/feed.xml",
    () => xml(rss([{ link: "http://169.254.169.254/latest/meta-data/iam", title: "Teaser", description: "short" }])),
  );
  await w.addSource({ type: "rss", url: feed.url("/feed.xml"), fetch_pages: true });
  const [o] = await w.poller().tick();
  assert.equal(o!.status, "ok");
  assert.equal(o!.pagesFetched, 1);
  // The item was kept with its teaser only: the metadata page was never read.
  const a = await w.deps.search.articleByUrl(w.dm.id, "http://169.254.169.254/latest/meta-data/iam");
  assert.equal(a?.body, "short");

  feed.route("/big.xml", () => xml(`<?xml version="1.0"?><rss><channel>${"x".repeat(300_000)}</channel></rss>`));
  feed.route("/big-ok.xml", () => xml(rss([{ link: feed.url("/a/2"), title: "Small", content: LONG("small") }])));
  const big = await w.addSource({ type: "rss", url: feed.url("/big-ok.xml") });
  feed.route("/big-ok.xml", redirect(feed.url("/big.xml")));
  w.clock.advance(300_000);
  const outcomes = await w.poller({}, { maxBytes: 100_000 }).tick();
  const bigOutcome = outcomes.find((x) => x.sourceId === big.json.id)!;
  assert.equal(bigOutcome.status, "error");
  assert.match(bigOutcome.error!, /larger than 100000 bytes/);
});
