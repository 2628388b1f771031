/**
 * A minimal HTTP/1.1 client over a socket opened to an address the caller already checked.
 *
 * Why not `fetch`: `fetch` resolves the host name itself, so a guard that resolved and checked the
 * name first could be fooled by DNS rebinding (the second lookup answers 127.0.0.1). Connecting to
 * the checked IP ourselves, and upgrading to TLS with the original host name (SNI and certificate
 * verification stay correct), closes that gap. The client speaks only what a one-shot GET needs:
 * `Connection: close`, Content-Length, chunked or close-delimited bodies, gzip/deflate decoding.
 */

/** One request over a pinned address. */
export interface PinnedRequest {
  url: URL;
  /** The IP to connect to (already checked by the caller). */
  address: string;
  method?: "GET" | "HEAD";
  headers?: Record<string, string>;
  /** Aborting closes the socket; pending reads reject. */
  signal?: AbortSignal;
  /** Extra PEM roots for TLS (tests with a self-signed certificate). */
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
const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** Buffered reads over a connection. */
class SocketReader {
  #conn: Deno.Conn;
  #buf = new Uint8Array(0);
  #eof = false;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  async #fill(): Promise<boolean> {
    if (this.#eof) return false;
    const chunk = new Uint8Array(16 * 1024);
    const n = await this.#conn.read(chunk);
    if (n === null) {
      this.#eof = true;
      return false;
    }
    const merged = new Uint8Array(this.#buf.length + n);
    merged.set(this.#buf);
    merged.set(chunk.subarray(0, n), this.#buf.length);
    this.#buf = merged;
    return true;
  }

  /** Reads one line without its CRLF (a bare LF is tolerated). */
  async line(limit: number): Promise<string> {
    while (true) {
      const i = this.#buf.indexOf(10);
      if (i >= 0) {
        const end = i > 0 && this.#buf[i - 1] === 13 ? i - 1 : i;
        const text = decoder.decode(this.#buf.subarray(0, end));
        this.#buf = this.#buf.subarray(i + 1);
        return text;
      }
      if (this.#buf.length > limit) throw new HttpProtocolError("Response header too large");
      if (!(await this.#fill())) throw new HttpProtocolError("Connection closed before the response ended");
    }
  }

  /** Up to `max` bytes, or `null` at end of stream. */
  async some(max: number): Promise<Uint8Array | null> {
    if (this.#buf.length === 0 && !(await this.#fill())) return null;
    const out = this.#buf.slice(0, Math.min(max, this.#buf.length));
    this.#buf = this.#buf.subarray(out.length);
    return out;
  }
}

/** Reads the status line and headers, skipping interim 1xx responses. */
async function readHead(reader: SocketReader): Promise<{ status: number; statusText: string; headers: Headers }> {
  while (true) {
    const statusLine = await reader.line(MAX_HEADER_BYTES);
    const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
    if (!m) throw new HttpProtocolError("Malformed status line");
    const headers = new Headers();
    let size = statusLine.length;
    while (true) {
      const line = await reader.line(MAX_HEADER_BYTES);
      if (line === "") break;
      size += line.length;
      if (size > MAX_HEADER_BYTES) throw new HttpProtocolError("Response header too large");
      const colon = line.indexOf(":");
      if (colon <= 0) throw new HttpProtocolError("Malformed header line");
      try {
        headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      } catch {
        throw new HttpProtocolError("Malformed header line");
      }
    }
    const status = Number(m[1]);
    if (status >= 100 && status < 200) continue;
    return { status, statusText: m[2] ?? "", headers };
  }
}

/** The response body as a stream framed by the headers. */
function bodyStream(
  reader: SocketReader,
  headers: Headers,
  close: () => void,
): ReadableStream<Uint8Array> {
  const te = headers.get("transfer-encoding")?.toLowerCase();
  const chunked = te !== undefined && te !== null && te.split(",").map((s) => s.trim()).includes("chunked");
  const lengthHeader = headers.get("content-length");
  let remaining = !chunked && lengthHeader !== null ? Number(lengthHeader) : -1;
  if (!chunked && lengthHeader !== null && !/^\d+$/.test(lengthHeader.trim())) {
    throw new HttpProtocolError("Malformed Content-Length");
  }
  let chunkLeft = 0;
  let finished = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (chunked) {
          if (chunkLeft === 0) {
            const sizeLine = await reader.line(1024);
            const size = parseInt(sizeLine.split(";")[0]!.trim(), 16);
            if (!Number.isFinite(size) || size < 0) throw new HttpProtocolError("Malformed chunk size");
            if (size === 0) {
              // Trailers, then the blank line that ends the message.
              while ((await reader.line(MAX_HEADER_BYTES)) !== "");
              finished = true;
              close();
              controller.close();
              return;
            }
            chunkLeft = size;
          }
          const data = await reader.some(chunkLeft);
          if (data === null) throw new HttpProtocolError("Connection closed inside a chunk");
          chunkLeft -= data.length;
          if (chunkLeft === 0) await reader.line(16); // the CRLF after each chunk
          controller.enqueue(data);
          return;
        }
        if (remaining === 0) {
          finished = true;
          close();
          controller.close();
          return;
        }
        const data = await reader.some(remaining > 0 ? remaining : 64 * 1024);
        if (data === null) {
          if (remaining > 0) throw new HttpProtocolError("Connection closed before Content-Length bytes arrived");
          finished = true;
          close();
          controller.close();
          return;
        }
        if (remaining > 0) remaining -= data.length;
        controller.enqueue(data);
      } catch (err) {
        close();
        controller.error(err);
      }
    },
    cancel() {
      if (!finished) close();
    },
  });
}

const NULL_BODY = new Set([204, 205, 304]);

/** Response constructor options; an odd status or reason phrase becomes a protocol error, not a TypeError. */
function responseInit(head: { status: number; statusText: string; headers: Headers }): ResponseInit {
  if (head.status < 200 || head.status > 599) throw new HttpProtocolError(`Unexpected status ${head.status}`);
  const statusText = /^[\t\x20-\x7e]*$/.test(head.statusText) ? head.statusText : "";
  return { status: head.status, statusText, headers: head.headers };
}

/**
 * The default {@link PinnedTransport}: TCP to `address`, TLS with the URL's host name for `https:`,
 * one HTTP/1.1 request with `Connection: close`.
 * @throws {HttpProtocolError} on a malformed response; connection errors as Deno raises them.
 */
export const pinnedHttp1: PinnedTransport = async ({ url, address, method = "GET", headers = {}, signal, caCerts }) => {
  const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  signal?.throwIfAborted();
  let conn: Deno.Conn = await Deno.connect({ hostname: address, port });
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      conn.close();
    } catch { /* already closed */ }
  };
  const onAbort = () => close();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    if (signal?.aborted) throw signal.reason;
    if (url.protocol === "https:") {
      const hostname = url.hostname.replace(/^\[|\]$/g, "");
      conn = await Deno.startTls(conn as Deno.TcpConn, { hostname, caCerts, alpnProtocols: ["http/1.1"] });
    }
    const lines = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`, "Connection: close"];
    for (const [name, value] of Object.entries(headers)) {
      if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) throw new TypeError("Header contains a line break");
      if (["host", "connection", "content-length", "transfer-encoding"].includes(name.toLowerCase())) continue;
      lines.push(`${name}: ${value}`);
    }
    const request = encoder.encode(lines.join("\r\n") + "\r\n\r\n");
    for (let off = 0; off < request.length;) off += await conn.write(request.subarray(off));
    const reader = new SocketReader(conn);
    const head = await readHead(reader);
    const done = () => {
      signal?.removeEventListener("abort", onAbort);
      close();
    };
    if (method === "HEAD" || NULL_BODY.has(head.status)) {
      done();
      return new Response(null, responseInit(head));
    }
    let body = bodyStream(reader, head.headers, done);
    const encoding = head.headers.get("content-encoding")?.trim().toLowerCase();
    if (encoding === "gzip" || encoding === "x-gzip" || encoding === "deflate") {
      const inflate = new DecompressionStream(encoding === "deflate" ? "deflate" : "gzip");
      body = body.pipeThrough(inflate as unknown as TransformStream<Uint8Array, Uint8Array>);
      head.headers.delete("content-encoding");
      head.headers.delete("content-length"); // it measured the compressed bytes
    } else if (encoding && encoding !== "identity") {
      throw new HttpProtocolError(`Unsupported Content-Encoding: ${encoding}`);
    }
    return new Response(body, responseInit(head));
  } catch (err) {
    signal?.removeEventListener("abort", onAbort);
    close();
    throw err;
  }
};
