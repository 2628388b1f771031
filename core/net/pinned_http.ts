/**
 * One HTTP request over a socket opened to an address the caller already checked, through
 * `node:http` / `node:https` with a pinned `lookup`.
 *
 * Why not `fetch`: `fetch` resolves the host name itself, so a guard that resolved and checked the
 * name first could be fooled by DNS rebinding (the second lookup answers 127.0.0.1). Here the
 * `lookup` answers only the checked address, while the URL's host name still goes out as `Host`,
 * TLS SNI and the name the certificate is verified against. Node's parser (llhttp) frames the body
 * (Content-Length, chunked, close-delimited) and refuses malformed responses; gzip and deflate are
 * decoded here, as `fetch` would.
 */
import type http from "node:http";
import type https from "node:https";
import type { LookupFunction } from "node:net";
import { smallChunks } from "../bytes.ts";
import { lazily } from "../lazily.ts";

// Loaded on the first pinned request: Node's HTTP, TLS and socket modules cost every process that
// imports the app about 20 ms, and most never fetch a user-supplied URL.
const nodeHttp = lazily(async () => {
  const [{ default: http }, { default: https }, { isIP }] = await Promise.all([
    import("node:http"),
    import("node:https"),
    import("node:net"),
  ]);
  return { http, https, isIP };
});

/** One request over a pinned address. */
export interface PinnedRequest {
  url: URL;
  /** The IP to connect to (already checked by the caller). */
  address: string;
  method?: "GET" | "HEAD";
  headers?: Record<string, string>;
  /** Aborting closes the socket; pending reads reject. */
  signal?: AbortSignal;
  /** PEM roots to trust for TLS (tests with a self-signed certificate). */
  caCerts?: string[];
}

/** Sends one request to a pinned address; same contract as `fetch` for the parts a GET uses. */
export type PinnedTransport = (request: PinnedRequest) => Promise<Response>;

/** Raised when the peer does not speak HTTP/1.1 as expected. */
export class HttpProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HttpProtocolError";
  }
}

const MAX_HEADER_BYTES = 64 * 1024;
const NULL_BODY = new Set([204, 205, 304]);
// Framing and routing are ours to set: a caller's value here could smuggle a second request.
const RESERVED_HEADERS = new Set(["host", "connection", "content-length", "transfer-encoding"]);

/** llhttp's parse errors carry codes `HPE_*`; everything else is a network error for the caller. */
function isParseError(err: unknown): boolean {
  return typeof (err as { code?: unknown })?.code === "string" && (err as { code: string }).code.startsWith("HPE_");
}

/** A `lookup` that answers `address` whatever name is asked: the socket goes where the guard looked. */
function pinnedLookup(address: string, isIP: (input: string) => number): LookupFunction {
  const family = isIP(address);
  if (family === 0) throw new TypeError("The pinned address is not an IP address");
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

function responseHeaders(raw: string[]): Headers {
  const headers = new Headers();
  try {
    for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  } catch {
    throw new HttpProtocolError("Malformed header line");
  }
  return headers;
}

/** The body of `res` as a web stream that errors (never ends quietly) when the response is cut short. */
function bodyStream(res: http.IncomingMessage, destroy: () => void): ReadableStream<Uint8Array> {
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const fail = () => {
        if (settled) return;
        settled = true;
        controller.error(new HttpProtocolError("Connection closed before the response ended"));
      };
      res.on("data", (chunk: Uint8Array) => {
        if (settled) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) res.pause();
      });
      res.on("end", () => {
        if (settled) return;
        settled = true;
        controller.close();
        destroy();
      });
      res.on("aborted", fail);
      res.on("error", fail);
      res.on("close", () => {
        if (!res.complete) fail();
      });
    },
    pull() {
      res.resume();
    },
    cancel() {
      settled = true;
      destroy();
    },
  }, { highWaterMark: 4 });
}

/**
 * The default {@link PinnedTransport}: TCP to `address`, TLS with the URL's host name for `https:`,
 * one HTTP/1.1 request with `Connection: close`.
 * @throws {HttpProtocolError} on a malformed response; connection and TLS errors as Node raises them;
 *   `TypeError` for a header value with a line break.
 */
export const pinnedHttp: PinnedTransport = async ({ url, address, method = "GET", headers = {}, signal, caCerts }) => {
  const { http, https, isIP } = await nodeHttp();
  signal?.throwIfAborted();
  const secure = url.protocol === "https:";
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const outgoing: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!RESERVED_HEADERS.has(name.toLowerCase())) outgoing[name] = value;
  }
  outgoing["Connection"] = "close";
  const options: https.RequestOptions = {
    host: hostname,
    port: url.port ? Number(url.port) : secure ? 443 : 80,
    path: `${url.pathname}${url.search}`,
    method,
    headers: outgoing,
    lookup: pinnedLookup(address, isIP),
    agent: false,
    maxHeaderSize: MAX_HEADER_BYTES,
    // SNI carries host names only (RFC 6066); an IP-literal URL is verified against the IP.
    ...(secure ? { servername: isIP(hostname) ? undefined : hostname, ca: caCerts, ALPNProtocols: ["http/1.1"] } : {}),
  };

  return new Promise<Response>((resolve, reject) => {
    // Throws a TypeError for a header value with CR/LF before anything is sent.
    const req = (secure ? https : http).request(options);
    let answered = false;
    const onAbort = () => req.destroy(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const destroy = () => {
      signal?.removeEventListener("abort", onAbort);
      req.destroy();
    };
    req.on("error", (err) => {
      signal?.removeEventListener("abort", onAbort);
      if (answered) return; // the body stream reports it
      if (signal?.aborted) reject(signal.reason);
      else reject(isParseError(err) ? new HttpProtocolError("Malformed response") : err);
    });
    req.on("response", (res) => {
      answered = true;
      try {
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 599) throw new HttpProtocolError(`Unexpected status ${status}`);
        const statusText = /^[\t\x20-\x7e]*$/.test(res.statusMessage ?? "") ? res.statusMessage ?? "" : "";
        const head = responseHeaders(res.rawHeaders);
        if (method === "HEAD" || NULL_BODY.has(status)) {
          destroy();
          resolve(new Response(null, { status, statusText, headers: head }));
          return;
        }
        let body = bodyStream(res, destroy);
        const encoding = head.get("content-encoding")?.trim().toLowerCase();
        if (encoding === "gzip" || encoding === "x-gzip" || encoding === "deflate") {
          const inflate = new DecompressionStream(encoding === "deflate" ? "deflate" : "gzip");
          // Small pieces in, so no single inflate step can turn into a gzip bomb's whole output.
          body = body.pipeThrough(smallChunks()).pipeThrough(
            inflate as unknown as TransformStream<Uint8Array, Uint8Array>,
          );
          head.delete("content-encoding");
          head.delete("content-length"); // it measured the compressed bytes
        } else if (encoding && encoding !== "identity") {
          throw new HttpProtocolError(`Unsupported Content-Encoding: ${encoding}`);
        }
        resolve(new Response(body, { status, statusText, headers: head }));
      } catch (err) {
        destroy();
        reject(err);
      }
    });
    req.end();
  });
};
