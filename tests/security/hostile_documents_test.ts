/**
 * Issue 24, finding 1: untrusted documents never stall the event loop. Each hostile document is
 * served by a local feed server on 127.0.0.1 and goes through the real app on a real Deno.serve
 * port: once at registration (`POST /v1/data-models/{id}/sources`) and once as a poll of a
 * registered source. A concurrent client on its own thread polls `/healthz` throughout; its worst
 * latency stays under 1 s, and the poll ends as a failed poll with backoff (not `ok` with 0 items).
 */
import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { assertNoStall, servedAndProbed } from "./_healthz.ts";
import { feedServer, LONG, rss } from "../sources/_feed_server.ts";
import { sourcesWorld } from "../sources/_world.ts";

// Deep enough that linkedom needs seconds on the main thread (the finding measured 60k: 5 s).
const DEPTH = 60_000;
const deep = (tag: string) => `<${tag}>`.repeat(DEPTH) + "x" + `</${tag}>`.repeat(DEPTH);

const rssDoc = (inner: string) =>
  `<?xml version="1.0"?><rss version="2.0"><channel><title>Alpha</title>` +
  `<item><title>Deep</title><link>http://alpha.example/deep</link><description>d</description>${inner}</item>` +
  `</channel></rss>`;
const atomDoc = (inner: string) =>
  `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Alpha</title>` +
  `<entry><title>Deep</title><link href="http://alpha.example/deep"/>${inner}</entry></feed>`;
// Item URLs point at the feed server itself: the benign sitemap's page fetch must not leave 127.0.0.1.
const urlsetDoc = (inner: string, loc = "http://127.0.0.1:9/a") =>
  `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
  `<url><loc>${loc}</loc>${inner}</url></urlset>`;
const indexDoc = (origin: string, inner: string) =>
  `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
  `<sitemap><loc>${origin}/child.xml</loc>${inner}</sitemap></sitemapindex>`;
const jsonFeed = (html: string) =>
  JSON.stringify({
    version: "https://jsonfeed.org/version/1.1",
    title: "Alpha",
    items: [{ id: "1", url: "http://alpha.example/j/1", title: "Deep", content_html: html }],
  });
const billionLaughs = `<?xml version="1.0"?>
<!DOCTYPE rss [
 <!ENTITY lol "lol">
 ${Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ""};`.repeat(10)}">`).join("\n ")}
]>
<rss version="2.0"><channel><title>Alpha</title>
<item><title>Laughs &lol9;</title><link>http://alpha.example/lol</link><description>&lol9;</description></item>
</channel></rss>`;
// 60,000 well-formed items in 4.4 MB: under the byte cap, over the entry cap.
const manyItems = () =>
  `<?xml version="1.0"?><rss version="2.0"><channel><title>Alpha</title>` +
  Array.from({ length: 60_000 }, (_, i) => `<item><title>T${i}</title><link>http://alpha.example/${i}</link></item>`)
    .join("") +
  `</channel></rss>`;

/** 64 MB of sitemap that gzips to about 64 KB (made once). */
let bomb: Promise<Uint8Array> | undefined;
const gzipBomb = () => bomb ??= makeGzipBomb();
async function makeGzipBomb(): Promise<Uint8Array> {
  const head = new TextEncoder().encode(`<?xml version="1.0"?><urlset>`);
  const filler = new TextEncoder().encode(" ".repeat(1024 * 1024));
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(head);
      for (let i = 0; i < 64; i++) c.enqueue(filler);
      c.close();
    },
  }).pipeThrough(new CompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>);
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A body that sends one byte every 100 ms, for up to 6 s. */
const slowBody = (contentType: string) => {
  let timer: ReturnType<typeof setInterval> | undefined;
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode(`<?xml version="1.0"?><rss version="2.0"><channel>`));
      timer = setInterval(() => {
        try {
          c.enqueue(new TextEncoder().encode(" "));
          if (++sent >= 60) {
            clearInterval(timer);
            c.close();
          }
        } catch {
          clearInterval(timer);
        }
      }, 100);
    },
    cancel() {
      clearInterval(timer);
    },
  });
  return new Response(body, { headers: { "content-type": contentType } });
};

type Kind = "rss" | "atom" | "jsonfeed" | "sitemap";
interface Hostile {
  name: string;
  kind: Kind;
  /** The hostile answer. */
  respond: (origin: string) => Response | Promise<Response>;
}

const xmlRes = (body: string | Uint8Array, type = "application/xml", headers: Record<string, string> = {}) =>
  new Response(body as BodyInit, { headers: { "content-type": type, ...headers } });

const HOSTILE: Hostile[] = [
  { name: "RSS nested 60k deep", kind: "rss", respond: () => xmlRes(rssDoc(deep("a")), "application/rss+xml") },
  { name: "Atom nested 60k deep", kind: "atom", respond: () => xmlRes(atomDoc(deep("a")), "application/atom+xml") },
  {
    name: "JSON Feed item HTML nested 60k deep",
    kind: "jsonfeed",
    respond: () => xmlRes(jsonFeed(deep("a")), "application/feed+json"),
  },
  { name: "sitemap nested 60k deep", kind: "sitemap", respond: () => xmlRes(urlsetDoc(deep("x"))) },
  {
    name: "sitemap index nested 60k deep",
    kind: "sitemap",
    respond: (origin) => xmlRes(indexDoc(origin, deep("x"))),
  },
  { name: "RSS with 60,000 items", kind: "rss", respond: () => xmlRes(manyItems(), "application/rss+xml") },
  { name: "RSS billion laughs", kind: "rss", respond: () => xmlRes(billionLaughs, "application/rss+xml") },
  {
    name: "gzipped sitemap bomb (64 MB)",
    kind: "sitemap",
    respond: async () => xmlRes(await gzipBomb(), "application/gzip"),
  },
  {
    name: "RSS gzip bomb by Content-Encoding (64 MB)",
    kind: "rss",
    respond: async () => xmlRes(await gzipBomb(), "application/rss+xml", { "content-encoding": "gzip" }),
  },
  { name: "RSS slow body", kind: "rss", respond: () => slowBody("application/rss+xml") },
];

/** A benign document of each kind, to register the source before it turns hostile. */
function benign(kind: Kind, origin: string): Response {
  const items = [{ link: `${origin}/a/1`, title: "Rail strike ends", content: LONG("rail") }];
  if (kind === "jsonfeed") {
    return xmlRes(
      JSON.stringify({
        version: "https://jsonfeed.org/version/1.1",
        items: [{ id: "1", url: `${origin}/a/1`, title: "Rail strike ends", content_text: LONG("rail") }],
      }),
      "application/feed+json",
    );
  }
  if (kind === "sitemap") return xmlRes(urlsetDoc("", `${origin}/a/1`));
  if (kind === "atom") return xmlRes(atomDoc(""), "application/atom+xml");
  return xmlRes(rss(items), "application/rss+xml");
}

Deno.test("hostile feeds, sitemaps and item HTML: /healthz answers within 1 s throughout, and each poll fails with backoff", async (t) => {
  await using feed = feedServer();
  await using w = await sourcesWorld({ SOURCE_FETCH_TIMEOUT_MS: "1500", SOURCE_PARSE_TIMEOUT_MS: "3000" });
  await gzipBomb(); // made before any measurement: compressing 64 MB is the test's work, not the server's
  await using served = await servedAndProbed(w.app);
  const api = async (path: string, init: { method?: string; body?: unknown } = {}) => {
    const res = await fetch(`${served.base}/v1/data-models/${w.dm.id}${path}`, {
      method: init.method ?? "GET",
      headers: { ...bearer(w.key), "content-type": "application/json" },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    return { status: res.status, json: res.status === 204 ? null : await res.json() };
  };
  const figures: string[] = [];
  try {
    for (const [i, doc] of HOSTILE.entries()) {
      await t.step(doc.name, async () => {
        let hostile = false;
        feed.route(`/s${i}`, () => hostile ? doc.respond(feed.origin) : benign(doc.kind, feed.origin));
        feed.route(`/r${i}`, () => doc.respond(feed.origin));
        feed.route("/child.xml", () => xmlRes(urlsetDoc(deep("x"))));
        const added = await api("/sources", {
          method: "POST",
          body: { type: doc.kind, url: feed.url(`/s${i}`), interval_s: 300 },
        });
        assert.equal(added.status, 201, JSON.stringify(added.json));
        await w.deps.poller.tick(); // the benign first poll
        hostile = true;

        // Registration of the hostile URL, then the next poll of the registered source, each measured.
        const { out: refused, window: atRegistration } = await served.measure(() =>
          api("/sources", { method: "POST", body: { type: doc.kind, url: feed.url(`/r${i}`), interval_s: 300 } })
        );
        w.clock.advance(301_000);
        const { out: outcomes, window: atPoll } = await served.measure(() => w.deps.poller.tick());
        figures.push(
          `${doc.name}: worst /healthz ${atRegistration.worstMs} ms at registration, ${atPoll.worstMs} ms at the poll`,
        );
        console.log(figures.at(-1));
        // Read the state, then take the sources away, before asserting: a failed step leaves no
        // hostile source for the next step's poll.
        const st = (await api(`/sources/${added.json.id}`)).json;
        assert.equal((await api(`/sources/${added.json.id}`, { method: "DELETE" })).status, 204);
        if (refused.status === 201) await api(`/sources/${refused.json.id}`, { method: "DELETE" });
        assertNoStall(atRegistration, "registration");
        assertNoStall(atPoll, "poll");
        assert.equal(refused.status, 422, JSON.stringify(refused.json));
        const outcome = outcomes.find((o) => o.sourceId === added.json.id);
        assert.ok(outcome, "the source was polled");
        assert.equal(
          outcome.status,
          "error",
          `the poll failed (it said ${outcome.status}, ${outcome.itemsSeen} items)`,
        );
        assert.equal(st.last_status, "error");
        assert.equal(st.consecutive_failures, 1);
        assert.ok(Date.parse(st.next_poll_at) - w.clock.now().getTime() >= 150_000, "the next poll backs off");
        assert.doesNotMatch(st.last_error, /<|lol|x{5}/, "the error names no part of the document");
      });
    }
  } finally {
    console.log(figures.join("\n"));
  }
});
