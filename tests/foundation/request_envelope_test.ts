/**
 * The app's root (request id in and out, the request's scope, one access-log line), around a tiny
 * Hono app: nothing else of the service is built or imported.
 */
import assert from "node:assert/strict";
import { OpenAPIHono } from "@hono/zod-openapi";
import { memoryLogger } from "../../core/log.ts";
import type { AppEnv } from "../../routes/env.ts";
import { createErrorHandler } from "../../routes/errors.ts";
import { familyApp, mount } from "../../routes/family.ts";
import { withRequestEnvelope } from "../../routes/middleware/request_envelope.ts";
import { actFor } from "../../routes/request_scope.ts";
import { AppError } from "../../core/errors.ts";

function tinyApp() {
  const log = memoryLogger();
  const app = new OpenAPIHono<AppEnv>();
  const onError = createErrorHandler(log, "message");
  app.onError(onError);
  app.notFound(() => {
    throw new AppError("not_found", "not_found", "Not found");
  });
  const api = familyApp("storefront", log);
  api.use("*", async (c, next) => {
    actFor(c, "tn_1");
    await next();
  });
  api.get("/sync", (c) => c.json({ id: c.env.requestId, tenant: c.get("tenantId") }));
  api.get("/async", async (c) => {
    await Promise.resolve();
    return c.json({ ok: true }, 201);
  });
  api.get("/raw", () => new Response("raw", { headers: { "x-request-id": "someone-else" } }));
  api.get("/throws", () => {
    throw new AppError("forbidden", "plan_required", "Buy a plan");
  });
  api.get("/rejects", async () => {
    await Promise.resolve();
    throw new Error("boom");
  });
  mount(app, "/api", api);
  app.fetch = withRequestEnvelope(app.fetch, log, { generator: () => "generated-id" });
  return { app, log };
}

const requestLines = (log: ReturnType<typeof memoryLogger>) => log.lines.filter((l) => l.msg === "request");

Deno.test("withRequestEnvelope() keeps a well-formed X-Request-Id, echoes it once and writes one line a request", async () => {
  const { app, log } = tinyApp();
  const res = await app.request("/api/sync?token=secret", { headers: { "x-request-id": "trace.1:2" } });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { id: "trace.1:2", tenant: "tn_1" });
  assert.equal(res.headers.get("x-request-id"), "trace.1:2");
  const lines = requestLines(log);
  assert.equal(lines.length, 1);
  const { ts, duration_ms, ...rest } = lines[0]!;
  assert.equal(ts, new Date(0).toISOString());
  assert.equal(typeof duration_ms, "number");
  assert.deepEqual(rest, {
    level: "info",
    msg: "request",
    method: "GET",
    path: "/api/sync",
    status: 200,
    tenant: "tn_1",
    caller: null,
    request_id: "trace.1:2",
  });
});

Deno.test("withRequestEnvelope() puts its id on responses built by hand, async answers and family errors", async () => {
  const { app, log } = tinyApp();
  const raw = await app.request("/api/raw", { headers: { "x-request-id": "<bad>" } });
  assert.equal(await raw.text(), "raw");
  assert.equal(raw.headers.get("x-request-id"), "generated-id", "the hand-built response's own id is replaced");
  const later = await app.request("/api/async");
  assert.equal(later.status, 201);
  assert.equal(later.headers.get("x-request-id"), "generated-id");
  const thrown = await app.request("/api/throws");
  assert.equal(thrown.status, 403);
  assert.deepEqual(await thrown.json(), { error: "plan_required" }, "the storefront family's body");
  assert.equal(thrown.headers.get("x-request-id"), "generated-id");
  const rejected = await app.request("/api/rejects");
  assert.equal(rejected.status, 500);
  assert.deepEqual(await rejected.json(), { error: "server_error" });
  assert.equal(rejected.headers.get("x-request-id"), "generated-id");
  const missing = await app.request("/api/nope");
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error, "not_found", "the family's 404 body");
  assert.deepEqual(requestLines(log).map((l) => l.status), [200, 201, 403, 500, 404]);
});

Deno.test("withRequestEnvelope() answers a path no route serves with the root's error handler, with its id and line", async () => {
  const { app, log } = tinyApp();
  const res = await app.request("/nope", { headers: { "x-request-id": "rq-404" } });
  assert.equal(res.status, 404);
  assert.deepEqual(await res.json(), { message: "Not found" });
  assert.equal(res.headers.get("x-request-id"), "rq-404");
  assert.deepEqual(requestLines(log).map((l) => [l.path, l.status, l.request_id]), [["/nope", 404, "rq-404"]]);
});

Deno.test("withRequestEnvelope() gives the connection's peer to the routes and logs a request that reached no answer", async () => {
  const log = memoryLogger();
  const app = new OpenAPIHono<AppEnv>();
  app.get("/peer", (c) => c.text(c.env.remoteAddr?.hostname ?? "none"));
  app.get("/odd", () => {
    // Not an Error: Hono's onError does not take it, so no answer is made.
    throw "a string";
  });
  const fetch = withRequestEnvelope(app.fetch, log, { generator: () => "id-1" });
  const peer = await fetch(new Request("http://x/peer"), { remoteAddr: { hostname: "192.0.2.7" } });
  assert.equal(await peer.text(), "192.0.2.7");
  await assert.rejects(async () => await fetch(new Request("http://x/odd")));
  assert.deepEqual(requestLines(log).map((l) => [l.path, l.status, l.request_id]), [["/peer", 200, "id-1"], [
    "/odd",
    500,
    "id-1",
  ]]);
});

Deno.test("withRequestEnvelope() on Deno.serve: routes read the socket's peer, and the answer still carries the id", async () => {
  const log = memoryLogger();
  const app = new OpenAPIHono<AppEnv>();
  app.get("/peer", (c) => c.text(c.env.remoteAddr?.hostname ?? "none"));
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    withRequestEnvelope(app.fetch, log, { generator: () => "id-2" }),
  );
  try {
    const res = await fetch(`http://127.0.0.1:${server.addr.port}/peer`);
    assert.equal(await res.text(), "127.0.0.1");
    assert.equal(res.headers.get("x-request-id"), "id-2");
  } finally {
    await server.shutdown();
  }
});
