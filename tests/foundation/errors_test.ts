import assert from "node:assert/strict";
import { OpenAPIHono } from "@hono/zod-openapi";
import { AppError } from "../../core/errors.ts";
import { memoryLogger } from "../../core/log.ts";
import type { AppEnv, ErrorFamily } from "../../routes/env.ts";
import { createErrorHandler, renderError } from "../../routes/errors.ts";
import { bodyReader } from "../../routes/middleware/body.ts";
import { withRequestEnvelope } from "../../routes/middleware/request_envelope.ts";

const parse = (r: ReturnType<typeof renderError>) => (r.body ? JSON.parse(r.body) : null);

Deno.test("renderError() message family: {message}, or text/plain when asked", () => {
  const r = renderError("message", new AppError("bad_request", "bad_date", "end_date must be on or after start_date"));
  assert.equal(r.status, 400);
  assert.deepEqual(parse(r), { message: "end_date must be on or after start_date" });
  const p = renderError(
    "message",
    new AppError("bad_request", "missing", "data_model_id is required", { plain: true }),
  );
  assert.equal(p.body, "data_model_id is required");
  assert.match(p.contentType!, /^text\/plain/);
});

Deno.test("renderError() payproxy family: fixed bodies per status", () => {
  const fam: ErrorFamily = "payproxy";
  assert.equal(
    renderError(fam, new AppError("bad_request", "x", "data_model_id is required")).body,
    "data_model_id is required",
  );
  assert.deepEqual(parse(renderError(fam, new AppError("unauthenticated", "bad_mac", "mac mismatch"))), {
    error: "invalid_payproxy_signature",
  });
  assert.deepEqual(
    parse(
      renderError(
        fam,
        new AppError("payment_required", "denied", "denied", {
          extra: { serviceSlug: "news", usage: [{ meterSlug: "query", quantity: 1 }] },
        }),
      ),
    ),
    { error: "payment_required", serviceSlug: "news", usage: [{ meterSlug: "query", quantity: 1 }] },
  );
  assert.deepEqual(parse(renderError(fam, new AppError("unprocessable", "empty_query", "query cannot be empty"))), {
    message: "query cannot be empty",
    code: "empty_query",
  });
  for (const [kind, status] of [["not_found", 404], ["internal", 500]] as const) {
    const r = renderError(fam, new AppError(kind, "x", "secret detail"));
    assert.equal(r.status, status);
    assert.equal(r.body, null);
  }
  // An unreadable body is a 422 on this family whatever the reader said.
  const r = renderError(fam, new AppError("too_large", "body_too_large", "Request body too large"));
  assert.equal(r.status, 422);
  assert.equal(parse(r).code, "body_too_large");
});

Deno.test("renderError() storefront and oauth families", () => {
  assert.deepEqual(
    parse(
      renderError(
        "storefront",
        new AppError("unauthenticated", "invalid_token", "expired", { reason: "token_expired" }),
      ),
    ),
    { error: "invalid_token", reason: "token_expired" },
  );
  assert.deepEqual(
    parse(
      renderError(
        "storefront",
        new AppError("forbidden", "plan_required", "x", {
          reason: "access_not_found",
          detail: "buy a plan",
          extra: { plans: [] },
        }),
      ),
    ),
    { error: "plan_required", reason: "access_not_found", detail: "buy a plan", plans: [] },
  );
  assert.deepEqual(
    parse(renderError("oauth", new AppError("bad_request", "unsupported_grant_type", "grant_type must be jwt-bearer"))),
    {
      error: "unsupported_grant_type",
      error_description: "grant_type must be jwt-bearer",
    },
  );
});

function familyApp(family: ErrorFamily, log = memoryLogger()) {
  const app = new OpenAPIHono<AppEnv>();
  app.onError(createErrorHandler(log, family));
  app.use("/echo", bodyReader({ limit: 1024 }));
  app.post("/echo", async (c) => c.json(await c.req.json()));
  app.get("/boom", () => {
    throw new Error("db password=hunter2 leaked ak_abcdefghijklmnop");
  });
  app.fetch = withRequestEnvelope(app.fetch, log);
  return { app, log };
}

Deno.test("bad input gets the family's error body, never a 500", async (t) => {
  const inputs = [
    ["malformed JSON", { "content-type": "application/json" }, "{not json", 400, "malformed_json"],
    ["wrong content type", { "content-type": "text/plain" }, '{"query":"x"}', 415, "unsupported_media_type"],
    [
      "oversized body",
      { "content-type": "application/json" },
      JSON.stringify({ q: "x".repeat(2000) }),
      413,
      "body_too_large",
    ],
  ] as const;
  for (const [name, headers, body, status, code] of inputs) {
    await t.step(`${name}: message family`, async () => {
      const res = await familyApp("message").app.request("/echo", { method: "POST", headers, body });
      assert.equal(res.status, status);
      assert.ok(typeof (await res.json()).message === "string");
    });
    await t.step(`${name}: payproxy family answers 422 {message, code}`, async () => {
      const res = await familyApp("payproxy").app.request("/echo", { method: "POST", headers, body });
      assert.equal(res.status, 422);
      assert.equal((await res.json()).code, code);
    });
    await t.step(`${name}: storefront family answers {error}`, async () => {
      const res = await familyApp("storefront").app.request("/echo", { method: "POST", headers, body });
      assert.equal(res.status, status);
      assert.equal((await res.json()).error, code);
    });
  }
  await t.step("a good body passes through intact", async () => {
    const res = await familyApp("message").app.request("/echo", {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: '{"query":"ok"}',
    });
    assert.deepEqual(await res.json(), { query: "ok" });
  });
});

Deno.test("unexpected errors: masked 500 per family, logged with the request id, no secrets", async () => {
  for (const family of ["message", "payproxy", "storefront", "oauth"] as const) {
    const { app, log } = familyApp(family);
    const res = await app.request("/boom", { headers: { "x-request-id": "req-12345678" } });
    assert.equal(res.status, 500);
    const text = await res.text();
    assert.ok(!text.includes("hunter2") && !text.includes("stack") && !text.includes("ak_abc"), text);
    if (family === "payproxy") assert.equal(text, "");
    assert.equal(res.headers.get("x-request-id"), "req-12345678");
    const line = log.lines.find((l) => l.msg === "unexpected error")!;
    assert.equal(line.request_id, "req-12345678");
    assert.ok(!JSON.stringify(line).includes("ak_abcdefghijklmnop"));
    assert.ok(!("stack" in line));
  }
});
