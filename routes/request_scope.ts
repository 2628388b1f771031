import type { Context } from "hono";

/** Where a server's peer address comes from: Deno.serve's handler info (its getter asks the runtime). */
export interface PeerInfo {
  readonly remoteAddr?: { hostname?: string };
}

/**
 * What the app's root knows of a request before any route runs, and what its access-log line
 * reports after: Hono's `c.env` on every route (routes/middleware/request_envelope.ts makes one a
 * request). The id lives here rather than among the context's variables so that the root needs no
 * middleware layer of Hono's `compose()` (bench/RESULTS.md, "Fixed cost of a request, third pass").
 */
export class RequestScope {
  /** The tenant the request acts for, once a key or widget names it ({@link actFor}). */
  tenantId: string | null = null;
  /** Who called, for the log, e.g. `payproxy:<agent-id>` ({@link callerIs}). */
  caller: string | null = null;
  readonly #info: PeerInfo | undefined;
  // null until asked for.
  #remoteAddr: { hostname?: string } | undefined | null = null;

  /**
   * `requestId`: a well-formed incoming `X-Request-Id`, or a fresh one; echoed on the response.
   * `info`: the server's, absent for calls made in-process or by `app.request()`.
   */
  constructor(readonly requestId: string, info?: PeerInfo) {
    this.#info = info;
  }

  /**
   * The connection's peer, read from the server's info only when a route asks for it (the public
   * rate limits): Deno answers `remoteAddr` with a call into the runtime and a new object each time,
   * which most requests never need.
   */
  get remoteAddr(): { hostname?: string } | undefined {
    if (this.#remoteAddr === null) {
      try {
        this.#remoteAddr = this.#info?.remoteAddr;
      } catch {
        // Asked after the answer went out: Deno no longer knows the connection.
        this.#remoteAddr = undefined;
      }
    }
    return this.#remoteAddr;
  }
}

type ScopedContext = Context<{ Bindings: RequestScope; Variables: { tenantId?: string; caller?: string } }>;

/** Records the tenant a request acts for: for its handlers (`c.get("tenantId")`) and its log line. */
export function actFor(c: ScopedContext, tenantId: string): void {
  c.set("tenantId", tenantId);
  c.env.tenantId = tenantId;
}

/** Records who called: for its handlers (`c.get("caller")`) and its log line. */
export function callerIs(c: ScopedContext, caller: string): void {
  c.set("caller", caller);
  c.env.caller = caller;
}
