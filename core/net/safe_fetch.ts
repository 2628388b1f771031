/**
 * SSRF-guarded fetching of user-supplied URLs (article URL queries, feed imports, image origins).
 *
 * Every hop is checked: scheme (http/https only), no credentials, host name not a metadata name,
 * every resolved address allowed by the {@link AddressPolicy}. The socket is then opened to the
 * address that was checked (see core/net/pinned_http.ts for why), so a DNS answer that changes between
 * check and connect cannot redirect us. Redirects are followed by hand, up to `maxRedirects`, each
 * one checked like the first URL. One deadline covers DNS, connect, redirects and the body; the
 * size cap is enforced while the body streams, before it is buffered.
 */
import { readStreamCapped } from "../bytes.ts";
import { type AddressPolicy, addressPolicy, type BlockReason, isIpLiteral } from "./ip.ts";
import { pinnedHttp, type PinnedTransport } from "./pinned_http.ts";

/** What went wrong, for callers to map to their own error bodies. */
export type SafeFetchErrorCode =
  | "invalid_url"
  | "blocked_address"
  | "unreachable"
  | "timeout"
  | "too_large"
  | "bad_status"
  | "unsupported_content_type"
  | "too_many_redirects";

/** A refused or failed fetch. `message` is safe to show the caller; `reason` and `cause` are for logs. */
export class SafeFetchError extends Error {
  readonly code: SafeFetchErrorCode;
  /** The origin's status, on `bad_status`. */
  readonly status?: number;
  /** Why an address was refused, on `blocked_address` (log it; do not show it). */
  readonly reason?: BlockReason | "blocked_hostname";
  /** The origin's response headers, on `bad_status` (`Retry-After`, a 304's validators). */
  readonly headers?: Headers;

  constructor(
    code: SafeFetchErrorCode,
    message: string,
    options: { status?: number; reason?: BlockReason | "blocked_hostname"; cause?: unknown; headers?: Headers } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "SafeFetchError";
    this.code = code;
    this.status = options.status;
    this.reason = options.reason;
    this.headers = options.headers;
  }
}

/** Resolves a host name to IP addresses (A and AAAA). */
export type Resolver = (hostname: string, signal: AbortSignal) => Promise<string[]>;

/**
 * The default resolver: `Deno.resolveDns` for A and AAAA records. `localhost` and `*.localhost`
 * answer loopback without a lookup (RFC 6761); other `/etc/hosts` entries are not consulted.
 */
export const dnsResolver: Resolver = async (hostname, signal) => {
  if (hostname === "localhost" || hostname.endsWith(".localhost")) return ["127.0.0.1", "::1"];
  const [a, aaaa] = await Promise.allSettled([
    Deno.resolveDns(hostname, "A", { signal }),
    Deno.resolveDns(hostname, "AAAA", { signal }),
  ]);
  return [...(a.status === "fulfilled" ? a.value : []), ...(aaaa.status === "fulfilled" ? aaaa.value : [])];
};

/** Host names of cloud metadata services: refused whatever they resolve to and whatever the policy. */
export const BLOCKED_HOSTNAMES: ReadonlySet<string> = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "metadata.azure.com",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.tencentyun.com",
  "100-100-100-200.alibaba",
]);

/** Process-wide settings of a {@link SafeFetcher}. */
export interface SafeFetcherOptions {
  /** Let loopback, private, CGNAT and unique-local addresses through (tests, demo). Default false. */
  allowPrivate?: boolean;
  /** Default deadline for the whole fetch, redirects included. Default 5000 ms. */
  timeoutMs?: number;
  /** Default body cap. Default 2 MiB. */
  maxBytes?: number;
  /** Default redirect limit. Default 5. */
  maxRedirects?: number;
  /** Replaces the address policy built from `allowPrivate` (tests). */
  policy?: AddressPolicy;
  /** Replaces DNS resolution (tests). */
  resolver?: Resolver;
  /** Replaces the pinned-socket HTTP client (tests). */
  transport?: PinnedTransport;
  /** Extra TLS roots (tests with a self-signed certificate). */
  caCerts?: string[];
  userAgent?: string;
}

/** Per-call options. */
export interface SafeFetchOptions {
  /** Allowed media types, exact (`text/html`) or by family (`image/*`). Required: callers say what they read. */
  accept: readonly string[];
  timeoutMs?: number;
  maxBytes?: number;
  maxRedirects?: number;
  /** Extra request headers. */
  headers?: Record<string, string>;
}

/** A fetched, fully read response. */
export interface SafeFetchResult {
  /** The final URL, after redirects. */
  url: string;
  status: number;
  headers: Headers;
  /** Lowercase media type without parameters, e.g. `text/html`. */
  contentType: string;
  /** The `charset` parameter of Content-Type, when given. */
  charset?: string;
  body: Uint8Array;
  /** Each URL that redirected, in order. */
  redirects: string[];
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Parses a Content-Type header into its media type and charset. */
export function parseContentType(header: string | null): { mime: string; charset?: string } {
  if (!header) return { mime: "" };
  const [type, ...params] = header.split(";");
  const charset = params.map((p) => p.trim().match(/^charset\s*=\s*"?([^";\s]+)"?$/i)?.[1]).find(Boolean);
  return { mime: type!.trim().toLowerCase(), charset: charset?.toLowerCase() };
}

// A media type as RFC 9110 spells one (type "/" subtype, token characters), short enough to show.
const MIME_SHOWN = /^[a-z0-9!#$&^_.+-]{1,40}\/[a-z0-9!#$&^_.+-]{1,60}$/;

/**
 * The origin's media type as our messages show it: the origin wrote the header, so anything that
 * is not a plain `type/subtype` is named, not echoed.
 */
function shownMime(mime: string): string {
  if (!mime) return "none";
  return MIME_SHOWN.test(mime) ? mime : "one that is not a valid media type";
}

/** True when `mime` is allowed by one of `patterns` (`type/subtype` or `type/*`). */
export function mimeAllowed(mime: string, patterns: readonly string[]): boolean {
  if (!mime) return false;
  return patterns.some((p) => {
    const pattern = p.toLowerCase();
    if (pattern === "*/*") return true;
    if (pattern.endsWith("/*")) return mime.startsWith(pattern.slice(0, -1));
    return mime === pattern;
  });
}

/**
 * Fetches user-supplied URLs safely. One instance per process; settings from config.
 * @example
 * const fetcher = new SafeFetcher({ allowPrivate: config.allowPrivateUrls });
 * const page = await fetcher.fetch(url, { accept: ["text/html"] });
 */
export class SafeFetcher {
  readonly #policy: AddressPolicy;
  readonly #resolver: Resolver;
  readonly #transport: PinnedTransport;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;
  readonly #maxRedirects: number;
  readonly #caCerts?: string[];
  readonly #userAgent: string;

  constructor(options: SafeFetcherOptions = {}) {
    this.#policy = options.policy ?? addressPolicy({ allowPrivate: options.allowPrivate ?? false });
    this.#resolver = options.resolver ?? dnsResolver;
    this.#transport = options.transport ?? pinnedHttp;
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#maxBytes = options.maxBytes ?? 2 * 1024 * 1024;
    this.#maxRedirects = options.maxRedirects ?? 5;
    this.#caCerts = options.caCerts;
    this.#userAgent = options.userAgent ?? "ArticleServiceFetcher/1.0";
  }

  /**
   * Fetches `url` with GET, following redirects, and reads the body.
   * @throws {SafeFetchError} for every refusal and failure.
   */
  async fetch(url: string, options: SafeFetchOptions): Promise<SafeFetchResult> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const controller = new AbortController();
    const timeoutError = new SafeFetchError("timeout", `URL did not answer within ${timeoutMs} ms`);
    const timer = setTimeout(() => controller.abort(timeoutError), timeoutMs);
    // Connect and DNS cannot always be interrupted, so the deadline races the work instead of
    // waiting for it; the abort still closes sockets the work opens later.
    const deadline = new Promise<never>((_, reject) => {
      controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
    });
    deadline.catch(() => {});
    try {
      return await Promise.race([this.#run(url, options, controller.signal), deadline]);
    } finally {
      clearTimeout(timer);
      if (!controller.signal.aborted) controller.abort(timeoutError);
    }
  }

  /**
   * Checks a URL without fetching it: scheme, host name and every resolved address.
   * @returns the parsed URL and the allowed addresses to connect to.
   * @throws {SafeFetchError} `invalid_url`, `blocked_address` or `unreachable`.
   */
  async check(url: string | URL, signal: AbortSignal = new AbortController().signal): Promise<
    { url: URL; addresses: string[] }
  > {
    let parsed: URL;
    try {
      parsed = typeof url === "string" ? new URL(url) : url;
    } catch {
      throw new SafeFetchError("invalid_url", "URL must be an absolute http or https URL");
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new SafeFetchError("invalid_url", "URL must be an absolute http or https URL");
    }
    if (parsed.username || parsed.password) {
      throw new SafeFetchError("invalid_url", "URL must not contain credentials");
    }
    // WHATWG URL parsing already canonicalised IPv4 spellings such as 2130706433 or 0x7f.1.
    const host = parsed.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();
    if (BLOCKED_HOSTNAMES.has(host) || host.endsWith(".metadata.google.internal")) {
      throw new SafeFetchError("blocked_address", "URL points to a blocked address", { reason: "blocked_hostname" });
    }
    let addresses: string[];
    if (isIpLiteral(host)) {
      addresses = [host];
    } else {
      try {
        addresses = await this.#resolver(host, signal);
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        throw new SafeFetchError("unreachable", "URL host name does not resolve", { cause: err });
      }
      if (addresses.length === 0) throw new SafeFetchError("unreachable", "URL host name does not resolve");
    }
    // Every answer must pass: a name that mixes public and private records is refused outright.
    for (const address of addresses) {
      const reason = this.#policy(address);
      if (reason !== null) {
        throw new SafeFetchError("blocked_address", "URL points to a blocked address", { reason });
      }
    }
    return { url: parsed, addresses };
  }

  async #run(input: string, options: SafeFetchOptions, signal: AbortSignal): Promise<SafeFetchResult> {
    const maxBytes = options.maxBytes ?? this.#maxBytes;
    const maxRedirects = options.maxRedirects ?? this.#maxRedirects;
    const headers: Record<string, string> = {
      "user-agent": this.#userAgent,
      accept: options.accept.join(", "),
      "accept-encoding": "gzip, deflate",
      ...options.headers,
    };
    const redirects: string[] = [];
    let current: string | URL = input;
    while (true) {
      const { url, addresses } = await this.check(current, signal);
      const response = await this.#send(url, addresses, headers, signal);
      if (REDIRECTS.has(response.status)) {
        await response.body?.cancel().catch(() => {});
        const location = response.headers.get("location");
        if (!location) {
          throw new SafeFetchError("bad_status", `URL answered with status ${response.status}`, {
            status: response.status,
          });
        }
        if (redirects.length >= maxRedirects) {
          throw new SafeFetchError("too_many_redirects", `URL redirected more than ${maxRedirects} times`);
        }
        redirects.push(url.href);
        try {
          current = new URL(location, url);
        } catch {
          throw new SafeFetchError("invalid_url", "URL redirected to an invalid location");
        }
        continue;
      }
      if (response.status < 200 || response.status > 299) {
        await response.body?.cancel().catch(() => {});
        throw new SafeFetchError("bad_status", `URL answered with status ${response.status}`, {
          status: response.status,
          headers: response.headers,
        });
      }
      const { mime, charset } = parseContentType(response.headers.get("content-type"));
      if (!mimeAllowed(mime, options.accept)) {
        await response.body?.cancel().catch(() => {});
        throw new SafeFetchError(
          "unsupported_content_type",
          `URL returned an unsupported content type: ${shownMime(mime)}`,
        );
      }
      const body = await readCapped(response, maxBytes);
      return {
        url: url.href,
        status: response.status,
        headers: response.headers,
        contentType: mime,
        charset,
        body,
        redirects,
      };
    }
  }

  async #send(url: URL, addresses: string[], headers: Record<string, string>, signal: AbortSignal): Promise<Response> {
    let lastError: unknown;
    for (const address of addresses) {
      try {
        return await this.#transport({ url, address, headers, signal, caCerts: this.#caCerts });
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        lastError = err;
      }
    }
    throw new SafeFetchError("unreachable", "URL could not be reached", { cause: lastError });
  }
}

/** Reads a body, refusing it as soon as it passes `maxBytes` (declared or streamed). */
async function readCapped(response: Response, maxBytes: number): Promise<Uint8Array> {
  const tooLarge = () => new SafeFetchError("too_large", `URL response is larger than ${maxBytes} bytes`);
  const declared = response.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (!response.body) return new Uint8Array(0);
  let body: Uint8Array | null;
  try {
    body = await readStreamCapped(response.body, maxBytes);
  } catch (err) {
    throw new SafeFetchError("unreachable", "URL response ended abnormally", { cause: err });
  }
  if (!body) throw tooLarge();
  return body;
}
