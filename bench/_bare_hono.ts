/**
 * The reference for bench/http_load.ts: a bare Hono app on Deno.serve with the same `/healthz`
 * answer as the service and nothing else (no middleware, no logging). Listens on the port given as
 * the first argument and prints `ready` once it does.
 *
 * A second argument adds one piece of the service's fixed cost, to see what each costs alone:
 * `response-header` (one more response header), `read-header` (reading one request header),
 * `envelope` (the app's root, routes/middleware/request_envelope.ts: the request id in and out and
 * the access-log line, with the buffered logger of main.ts), `contract-id` (the least the contract
 * asks of every answer: `X-Request-Id` echoing a caller's id or a fresh one, written by hand in the
 * handler).
 *
 *   deno run -A bench/_bare_hono.ts 8123 [piece]
 */
import { Hono } from "hono";
import { createLogger } from "../core/log.ts";
import { LineBuffer } from "../core/log_buffer.ts";
import type { AppEnv } from "../routes/env.ts";
import { withRequestEnvelope } from "../routes/middleware/request_envelope.ts";

const app = new Hono<AppEnv>();
const piece = Deno.args[1];
if (piece === "read-header") {
  app.use("*", async function readHeader(c, next) {
    c.req.header("x-request-id");
    await next();
  });
}
app.get(
  "/healthz",
  (c) =>
    piece === "response-header"
      ? c.json({ status: "ok" }, 200, { "x-request-id": "a" })
      : piece === "contract-id"
      ? c.json({ status: "ok" }, 200, { "x-request-id": c.req.header("x-request-id") ?? crypto.randomUUID() })
      : c.json({ status: "ok" }),
);
if (piece === "envelope") {
  const lines = new LineBuffer();
  const log = createLogger({ clock: () => new Date(), nowMs: Date.now, write: lines.write, lines });
  app.fetch = withRequestEnvelope(app.fetch, log);
}
Deno.serve({ hostname: "127.0.0.1", port: Number(Deno.args[0] ?? 0), onListen: () => console.log("ready") }, app.fetch);
