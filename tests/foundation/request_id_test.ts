import assert from "node:assert/strict";
import { OpenAPIHono } from "@hono/zod-openapi";
import { memoryLogger } from "../../core/log.ts";
import type { AppEnv } from "../../routes/env.ts";
import { withRequestEnvelope } from "../../routes/middleware/request_envelope.ts";
import { echoRequestId, requestIdOf } from "../../routes/middleware/request_id.ts";

const generated = () => "generated-id";
const withId = (id: string) => new Request("http://x/", { headers: { "x-request-id": id } });

function tinyApp(generator?: () => string) {
  const app = new OpenAPIHono<AppEnv>();
  app.get("/json", (c) => c.json({ id: c.env.requestId }));
  // A Response the handler builds itself, and the error handler's, skip Hono's prepared headers.
  app.get("/raw", () => new Response("raw"));
  app.get("/boom", () => {
    throw new Error("boom");
  });
  app.onError(() => new Response("error", { status: 500 }));
  app.fetch = withRequestEnvelope(app.fetch, memoryLogger(), generator ? { generator } : {});
  return app;
}

Deno.test("requestIdOf() keeps a well-formed incoming X-Request-Id, with Hono's characters and . and :", () => {
  for (const id of ["trace-abc-123", "a_b=c", "span.1:2", "x".repeat(128)]) {
    assert.equal(requestIdOf(withId(id), generated), id);
  }
});

Deno.test("requestIdOf() replaces a hostile, empty, over-long or missing incoming id with a generated one", () => {
  for (const id of ["<script>", "a b", "x".repeat(129), "", 'a"b', "a\\b"]) {
    assert.equal(requestIdOf(withId(id), generated), "generated-id");
  }
  assert.equal(requestIdOf(new Request("http://x/"), generated), "generated-id");
});

Deno.test("echoRequestId() leaves a response that already carries the id as it is, and never throws on it", () => {
  const passedOn = Response.json({}, { headers: { "x-request-id": "rq-1" } });
  echoRequestId(passedOn, "rq-1");
  assert.equal(passedOn.headers.get("x-request-id"), "rq-1");
  const other = new Response("x", { headers: { "x-request-id": "someone-else" } });
  echoRequestId(other, "rq-1");
  assert.equal(other.headers.get("x-request-id"), "rq-1");
});

Deno.test("the root gives handlers the request's id and echoes it on every response", async () => {
  const app = tinyApp(generated);
  const json = await app.request("/json", { headers: { "x-request-id": "trace-abc-123" } });
  assert.equal(json.headers.get("x-request-id"), "trace-abc-123");
  assert.deepEqual(await json.json(), { id: "trace-abc-123" });
  const fresh = await app.request("/json", { headers: { "x-request-id": "<script>" } });
  assert.equal(fresh.headers.get("x-request-id"), "generated-id");
  assert.deepEqual(await fresh.json(), { id: "generated-id" });
  const raw = await app.request("/raw", { headers: { "x-request-id": "rq-raw-1234" } });
  assert.equal(raw.headers.get("x-request-id"), "rq-raw-1234");
  assert.equal(await raw.text(), "raw");
  const boom = await app.request("/boom");
  assert.equal(boom.status, 500);
  assert.equal(boom.headers.get("x-request-id"), "generated-id");
  await boom.body?.cancel();
});

Deno.test("the root generates a UUID by default", async () => {
  const res = await tinyApp().request("/json");
  assert.match(
    res.headers.get("x-request-id")!,
    /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
  );
  await res.body?.cancel();
});

Deno.test("echoRequestId() leaves an immutable response that carries the id alone, and refuses one that carries another", async () => {
  // A fetch's response has immutable headers, as the paid proxy passes some on.
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) => new Response("x", { headers: { "x-request-id": new URL(req.url).searchParams.get("id")! } }),
  );
  try {
    const same = await fetch(`http://127.0.0.1:${server.addr.port}/?id=rq-1`);
    echoRequestId(same, "rq-1");
    assert.equal(same.headers.get("x-request-id"), "rq-1");
    await same.body?.cancel();
    const other = await fetch(`http://127.0.0.1:${server.addr.port}/?id=upstream-7`);
    assert.throws(() => echoRequestId(other, "rq-1"), TypeError);
    await other.body?.cancel();
  } finally {
    await server.shutdown();
  }
});
