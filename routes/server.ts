import type { Logger } from "../core/log.ts";

/** A running HTTP server and how to stop it. */
export interface RunningServer {
  /** The bound address, e.g. `http://127.0.0.1:43123`. */
  url: string;
  port: number;
  /** Stops accepting connections, lets in-flight requests finish (up to `timeoutMs`), then closes. */
  shutdown(timeoutMs?: number): Promise<void>;
  /** Resolves when the server has stopped. */
  finished: Promise<void>;
}

/** Serves `handler` with `Deno.serve` on `hostname:port` (port 0 picks a free one). */
export function startServer(
  handler: (req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => Response | Promise<Response>,
  { hostname = "127.0.0.1", port = 0, log }: { hostname?: string; port?: number; log?: Logger } = {},
): RunningServer {
  const server = Deno.serve({ hostname, port, onListen: () => {} }, handler);
  const addr = server.addr;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  const url = `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${addr.port}`;
  let stopping: Promise<void> | undefined;
  return {
    url,
    port: addr.port,
    finished: server.finished,
    shutdown(timeoutMs = 10_000) {
      stopping ??= (async () => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const timedOut = new Promise<"timeout">((resolve) => {
          timer = setTimeout(() => resolve("timeout"), timeoutMs);
        });
        const result = await Promise.race([server.shutdown().then(() => "done" as const), timedOut]);
        clearTimeout(timer);
        if (result === "timeout") {
          log?.warn("shutdown timed out; in-flight requests were cut", { timeout_ms: timeoutMs });
        }
      })();
      return stopping;
    },
  };
}
