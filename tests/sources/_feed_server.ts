/** A real feed server on 127.0.0.1 port 0 whose answers each test sets per path. */

export type FeedHandler = (req: Request) => Response | Promise<Response>;

/** One request the server saw. */
export interface SeenRequest {
  path: string;
  headers: Headers;
}

/** Starts the server; `await using` it. */
export function feedServer() {
  const routes = new Map<string, FeedHandler>();
  const seen: SeenRequest[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const url = new URL(req.url);
    seen.push({ path: url.pathname + url.search, headers: req.headers });
    const handler = routes.get(url.pathname);
    return handler ? handler(req) : new Response("not found", { status: 404 });
  });
  const origin = `http://127.0.0.1:${server.addr.port}`;
  return {
    origin,
    url: (path: string) => `${origin}${path}`,
    seen,
    /** Requests made to one path. */
    hits: (path: string) => seen.filter((s) => s.path.split("?")[0] === path).length,
    route(path: string, handler: FeedHandler) {
      routes.set(path, handler);
    },
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/** An RSS 2.0 document. */
export function rss(
  items: { link: string; title: string; description?: string; content?: string; pubDate?: string }[],
) {
  return `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>Alpha News</title>
${
    items.map((i) =>
      `<item><title>${i.title}</title><link>${i.link}</link>${
        i.description ? `<description>${i.description}</description>` : ""
      }${i.content ? `<content:encoded><![CDATA[${i.content}]]></content:encoded>` : ""}${
        i.pubDate ? `<pubDate>${i.pubDate}</pubDate>` : ""
      }</item>`
    ).join("\n")
  }
</channel></rss>`;
}

export const xml = (body: string, headers: Record<string, string> = {}) =>
  new Response(body, { headers: { "content-type": "application/rss+xml; charset=utf-8", ...headers } });

/** A paragraph long enough to count as full text. */
export const LONG = (topic: string) =>
  Array.from({ length: 8 }, (_, i) => `The ${topic} report, part ${i + 1}, describes what happened in detail today.`)
    .join(" ");
