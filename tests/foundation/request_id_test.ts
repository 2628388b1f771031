import assert from "node:assert/strict";
import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../routes/env.ts";
import { requestId } from "../../routes/middleware/request_id.ts";

function tinyApp() {
  const app = new OpenAPIHono<AppEnv>();
  app.use("*", requestId({ generator: () => "generated-id" }));
  app.get("/json", (c) => c.json({ id: c.get("requestId") }));
  // A Response the handler builds itself, and the error handler's, skip Hono's prepared headers.
  app.get("/raw", () => new Response("raw"));
  app.get("/boom", () => {
    throw new Error("boom");
  });
  app.onError(() => new Response("error", { status: 500 }));
  return app;
}

Deno.test("requestId() keeps a well-formed incoming X-Request-Id, with Hono's characters and . and :", async () => {
  const app = tinyApp();
  for (const id of ["trace-abc-123", "a_b=c", "span.1:2", "x".repeat(128)]) {
    const res = await app.request("/json", { headers: { "x-request-id": id } });
    assert.equal(res.headers.get("x-request-id"), id);
    assert.deepEqual(await res.json(), { id });
  }
});

Deno.test("requestId() replaces a hostile, empty or over-long incoming id with a generated one", async () => {
  const app = tinyApp();
  for (const id of ["<script>", "a b", "x".repeat(129), ""]) {
    const res = await app.request("/json", { headers: { "x-request-id": id } });
    assert.equal(res.headers.get("x-request-id"), "generated-id");
    assert.deepEqual(await res.json(), { id: "generated-id" });
  }
});

Deno.test("requestId() echoes the id on Responses a handler or the error handler builds itself", async () => {
  const app = tinyApp();
  const raw = await app.request("/raw", { headers: { "x-request-id": "rq-raw-1234" } });
  assert.equal(raw.headers.get("x-request-id"), "rq-raw-1234");
  assert.equal(await raw.text(), "raw");
  const boom = await app.request("/boom");
  assert.equal(boom.status, 500);
  assert.equal(boom.headers.get("x-request-id"), "generated-id");
  await boom.body?.cancel();
});

Deno.test("requestId() generates a UUID by default", async () => {
  const app = new OpenAPIHono<AppEnv>();
  app.use("*", requestId());
  app.get("/", (c) => c.text("ok"));
  const res = await app.request("/");
  assert.match(
    res.headers.get("x-request-id")!,
    /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
  );
});
