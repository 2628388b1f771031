import { BODY_READ_DEFAULTS } from "../core/config.ts";
import type { Logger } from "../core/log.ts";
import { anyOwnedChunks, hasOwnedChunks, releasingConsumed } from "../core/owned_chunks.ts";
import { BodyStalledError, BodyTooSlowError } from "./middleware/body.ts";
import { rebuiltRequest } from "./rebuilt_request.ts";

/**
 * How long a request body may send nothing before the request is answered 408 and its connection
 * closed. Deno.serve has no header timeout (a client that never finishes its headers keeps its
 * connection): the reverse proxy in front closes those (docs/security.md).
 */
export const BODY_IDLE_TIMEOUT_MS = 10_000;

/**
 * How long a request body may take in all (the time its reader waits on the sender): `floorMs`,
 * and then as long as it keeps `minBytesPerS` on average (mod_reqtimeout's `MinRate`). The idle
 * timeout alone let a byte every few seconds hold a body's share of the body budget
 * (routes/middleware/body_budget.ts) for as long as its sender liked.
 */
export interface BodyReadDeadline {
  floorMs: number;
  minBytesPerS: number;
}

/** The default {@link BodyReadDeadline} (`BODY_READ_FLOOR_S`, `BODY_MIN_BYTES_PER_S`). */
export const BODY_READ_DEADLINE: BodyReadDeadline = {
  floorMs: BODY_READ_DEFAULTS.floorS * 1000,
  minBytesPerS: BODY_READ_DEFAULTS.minBytesPerS,
};

// Methods the Fetch standard's `Request` refuses to carry (CONNECT never reaches a handler). No
// route serves them, so their body is never read: the request goes on as it came, to the app's 404.
const UNWRAPPABLE_METHODS = new Set(["TRACE", "TRACK"]);

/** A running HTTP server and how to stop it. */
export interface RunningServer {
  /** The bound address, e.g. `http://127.0.0.1:43123`. */
  url: string;
  port: number;
  /**
   * Stops accepting connections and lets in-flight requests finish (up to `timeoutMs`). After the
   * timeout, handlers still running get `abortGraceMs` more to settle. Resolves with what happened,
   * so the caller closes its stores only when no handler can still use them.
   */
  shutdown(timeoutMs?: number, abortGraceMs?: number): Promise<ShutdownOutcome>;
  /** Handlers running right now. */
  readonly inFlight: number;
  /** Resolves when the server has stopped. */
  finished: Promise<void>;
}

/**
 * How a shutdown ended: every request finished in time; or the timeout passed and the handlers
 * still running then settled within the grace (`late`); or some are still running (`running` > 0),
 * in which case the stores must be left open.
 */
export type ShutdownOutcome =
  | { outcome: "finished" }
  | { outcome: "timed_out"; late: number; running: number };

/** Serves `handler` with `Deno.serve` on `hostname:port` (port 0 picks a free one). */
export function startServer(
  handler: (req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => Response | Promise<Response>,
  {
    hostname = "127.0.0.1",
    port = 0,
    log,
    bodyIdleTimeoutMs = BODY_IDLE_TIMEOUT_MS,
    bodyReadDeadline = BODY_READ_DEADLINE,
  }: {
    hostname?: string;
    port?: number;
    log?: Logger;
    /** A body that sends nothing this long errors with {@link BodyStalledError} (readers answer 408). */
    bodyIdleTimeoutMs?: number;
    /** A body slower than this errors with {@link BodyTooSlowError} (readers answer 408). */
    bodyReadDeadline?: BodyReadDeadline;
  } = {},
): RunningServer {
  // Handler calls in flight, so shutdown knows whether anything may still use the stores. A count
  // and one callback per call: a Set of wrapped promises cost every request three more promises.
  let inFlight = 0;
  let onIdle: (() => void) | null = null;
  const settled = () => {
    if (--inFlight === 0) onIdle?.();
  };
  const whenIdle = () => inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (onIdle = resolve));
  // Made once, not per request.
  const answered = (res: Response) => {
    settled();
    return releasingSentChunks(res);
  };
  const failed = (err: unknown): never => {
    settled();
    throw err;
  };
  const server = Deno.serve({ hostname, port, onListen: () => {} }, (req, info) => {
    inFlight++;
    let out: Response | Promise<Response>;
    try {
      const timed = req.body !== null && !UNWRAPPABLE_METHODS.has(req.method);
      out = handler(timed ? withBodyIdleTimeout(req, bodyIdleTimeoutMs, bodyReadDeadline) : req, info);
    } catch (err) {
      settled();
      throw err;
    }
    if (!(out instanceof Promise)) {
      settled();
      return releasingSentChunks(out);
    }
    return out.then(answered, failed);
  });
  const addr = server.addr;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  const url = `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${addr.port}`;
  let stopping: Promise<ShutdownOutcome> | undefined;
  return {
    url,
    port: addr.port,
    finished: server.finished,
    get inFlight() {
      return inFlight;
    },
    shutdown(timeoutMs = 10_000, abortGraceMs = 2_000) {
      stopping ??= (async (): Promise<ShutdownOutcome> => {
        const graceful = server.shutdown().then(() => "done" as const);
        if ((await within(graceful, timeoutMs)) === "done") {
          log?.info("shutdown: every in-flight request finished");
          return { outcome: "finished" };
        }
        // No new request arrives once shutdown began: the count only goes down from here.
        const pending = inFlight;
        await within(whenIdle(), abortGraceMs);
        const running = inFlight;
        const late = Math.max(0, pending - running);
        if (running > 0) {
          log?.error("shutdown timed out: handlers still running, stores stay open", {
            timeout_ms: timeoutMs,
            finished_late: late,
            still_running: running,
          });
        } else {
          log?.warn("shutdown timed out: open connections cut, every handler had finished", {
            timeout_ms: timeoutMs,
            finished_late: late,
          });
        }
        return { outcome: "timed_out", late, running };
      })();
      return stopping;
    },
  };
}

/**
 * A response whose body's chunks are its own (core/owned_chunks.ts) gets a body that frees each chunk
 * once Deno.serve has written it, instead of when the collector gets round to it.
 */
function releasingSentChunks(res: Response): Response {
  // Only then: `res.body` would turn every string body into a stream (the slower way out).
  if (!anyOwnedChunks() || !hasOwnedChunks(res.body)) return res;
  return new Response(releasingConsumed(res.body!), {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}

/**
 * The request with a body stream that errors with {@link BodyStalledError} after `idleMs` without a
 * chunk, or with {@link BodyTooSlowError} once it is behind its {@link BodyReadDeadline}. The
 * deadline counts only the time its reader waits on the sender: a body waiting unread for its share
 * of the budget (before its first read, or midway, a body of unknown length) is not charged.
 */
function withBodyIdleTimeout(req: Request, idleMs: number, deadline: BodyReadDeadline): Request {
  const source = req.body!.getReader();
  let waitedMs = 0;
  let received = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const pulledAt = performance.now();
      // Each byte received pushes the deadline on by 1/minBytesPerS seconds.
      const leftMs = deadline.floorMs + received * 1000 / deadline.minBytesPerS - waitedMs;
      const tooSlow = leftMs < idleMs;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stalled = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              tooSlow ? new BodyTooSlowError(deadline.floorMs, deadline.minBytesPerS) : new BodyStalledError(idleMs),
            ),
          Math.max(0, tooSlow ? leftMs : idleMs),
        );
      });
      try {
        const chunk = await Promise.race([source.read(), stalled]);
        if (chunk.done) controller.close();
        else {
          received += chunk.value.byteLength;
          controller.enqueue(chunk.value);
        }
      } catch (err) {
        if (err instanceof BodyStalledError || err instanceof BodyTooSlowError) source.cancel(err).catch(() => {});
        controller.error(err);
      } finally {
        clearTimeout(timer);
        waitedMs += performance.now() - pulledAt;
      }
    },
    cancel(reason) {
      return source.cancel(reason);
    },
    // Pulled only when its reader reads: a stream pulls one chunk ahead by default, at once, which
    // started the deadline while the body still waited, unread, for its share of the body budget.
  }, { highWaterMark: 0 });
  return rebuiltRequest(req, body);
}

/** `p`'s value, or "timeout" after `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
