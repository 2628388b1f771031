/**
 * The reference for bench/http_load.ts: a bare Hono app on Deno.serve with the same `/healthz`
 * answer as the service and nothing else (no middleware, no logging). Listens on the port given as
 * the first argument and prints `ready` once it does.
 *
 *   deno run -A bench/_bare_hono.ts 8123
 */
import { Hono } from "hono";

const app = new Hono();
app.get("/healthz", (c) => c.json({ status: "ok" }));
Deno.serve({ hostname: "127.0.0.1", port: Number(Deno.args[0] ?? 0), onListen: () => console.log("ready") }, app.fetch);
