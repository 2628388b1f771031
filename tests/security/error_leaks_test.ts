/**
 * Issue 30 item 3: no library text reaches a public error body, and no raw input is echoed. Each
 * route family (message, payproxy, storefront, oauth, widget, MCP) gets the inputs that used to
 * leak: malformed JSON, a model reply that is not JSON (V8's parse message quoted it), an output
 * schema zod cannot compile (zod's message quoted it), an upstream error text, an origin's odd
 * Content-Type, a hostile id, a bad JWT. The whole body is pinned.
 */
import assert from "node:assert/strict";
import { ID_JAG_TOKEN_TYPE } from "../../core/identity/id_jag.ts";
import { newId } from "../../core/ids.ts";
import type { AiModel, Widget } from "../../core/store/models.ts";
import { bearer } from "../_helpers.ts";
import { chatReply, failReply, type Reply, startChatServer } from "../answer/_chat_server.ts";
import { signedInit } from "../payproxy/_helpers.ts";
import { SF, storefrontWorld } from "../storefront/_world.ts";
import { ORIGIN, widgetWorld } from "../widget/_world.ts";
import { echoesMarker, LIBRARY_TEXT, MARKER } from "./_leaks.ts";

/** Reads a body, checks it carries neither the marker nor library text; JSON is parsed, text kept, empty is null. */
async function body(res: Response): Promise<unknown> {
  const text = await res.text();
  assert.ok(!echoesMarker(text), `the input is echoed: ${text}`);
  assert.ok(!LIBRARY_TEXT.test(text), `library text in the body: ${text}`);
  if (text === "") return null;
  return /json/.test(res.headers.get("content-type") ?? "") ? JSON.parse(text) : text;
}

const SCHEMA = {
  type: "object",
  properties: { answer: { type: "string", minLength: 1 } },
  required: ["answer"],
};
const notJson = chatReply(`Sure! ${MARKER} {"answer": `);
const upstreamError = failReply(400, {}, JSON.stringify({ error: { message: `${MARKER} key sk-leak-123 invalid` } }));

/**
 * A tenant with articles, OpenAI-backed AI models (structured, text, and one whose schema cannot
 * be compiled) and a widget over the text model; the chat server answers from `replies`.
 */
async function answerWorld() {
  const replies: Reply[] = [];
  // The server takes the reply at the index of the request: each case pushes what its calls get.
  const chat = startChatServer(replies);
  const w = await widgetWorld({
    env: {
      OPENAI_BASE_URL: chat.baseUrl,
      OPENAI_API_KEY: "sk-leak-123",
      OPENAI_MAX_RETRIES: "0",
      OPENAI_TIMEOUT_MS: "5000",
      // Local peers (the source origin below) stand in for public hosts.
      ALLOW_PRIVATE_URLS: "true",
    },
  });
  const acme = await w.tenant("Acme");
  const now = w.clock.now().toISOString();
  const model = (name: string, output: AiModel["output"]): AiModel => ({
    ...acme.model,
    id: newId("am", w.clock),
    name,
    provider: { kind: "openai", model: "gpt-test" },
    output,
    createdAt: now,
  });
  const structured = model("JSON", { kind: "structured", schema: SCHEMA });
  const text = model("Text", { kind: "text" });
  const badSchema = model("Bad schema", {
    kind: "structured",
    schema: { type: "object", properties: { a: { $ref: `#/$defs/${MARKER}` } } },
  });
  for (const m of [structured, text, badSchema]) await w.deps.repos.aiModels.create(m);
  const widget: Widget = { ...acme.widget, id: newId("wd", w.clock), aiModelId: text.id };
  await w.deps.repos.widgets.create(widget);
  const ask = (id: string, payload: unknown) =>
    w.app.request(`/app/aimodel/${encodeURIComponent(id)}`, {
      method: "POST",
      headers: { ...bearer(acme.key), "content-type": "application/json" },
      body: typeof payload === "string" ? payload : JSON.stringify(payload),
    });
  const mcp = (params: unknown) =>
    w.app.request("/mcp", {
      method: "POST",
      headers: {
        ...bearer(acme.key),
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-03-26",
      },
      body: typeof params === "string"
        ? params
        : JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params }),
    });
  const close = async () => {
    await w.close();
    await chat.close();
  };
  return { w, acme, structured, text, badSchema, widget, replies, ask, mcp, [Symbol.asyncDispose]: close };
}

Deno.test("error leaks, message family: malformed JSON, a model reply that is not JSON, an upstream error, an uncompilable schema, a hostile id", async () => {
  await using t = await answerWorld();
  const malformed = await t.ask(t.structured.id, `{"query": "${MARKER}`);
  assert.equal(malformed.status, 400);
  assert.deepEqual(await body(malformed), { message: "Malformed JSON body: not valid JSON" });

  t.replies.push(notJson, notJson);
  const reply = await t.ask(t.structured.id, { query: "bus fares" });
  assert.equal(reply.status, 502);
  assert.deepEqual(await body(reply), {
    message: "model output did not match the schema: the reply is not valid JSON",
  });

  t.replies.push(upstreamError);
  const upstream = await t.ask(t.text.id, { query: "bus fares" });
  assert.equal(upstream.status, 502);
  assert.deepEqual(await body(upstream), { message: "AI provider rejected the request: HTTP 400" });

  const schema = await t.ask(t.badSchema.id, { query: "bus fares" });
  assert.equal(schema.status, 502);
  assert.deepEqual(await body(schema), {
    message: "the model's output schema is not usable: it uses something this service cannot compile",
  });
  // The compiler's words are kept for the operator, in the log only.
  assert.ok(t.w.log.lines.some((e) => JSON.stringify(e).includes("schema_invalid")), "the refusal is logged");

  const hostile = await t.ask(`am_${MARKER}`, { query: "bus fares" });
  assert.equal(hostile.status, 422);
  assert.deepEqual(await body(hostile), {
    message: "ai_model_id is not in the correct format: expected am_ followed by letters and digits",
  });
  const unknown = await t.ask("am_nosuchmodel0", { query: "bus fares" });
  assert.equal(unknown.status, 404);
  assert.deepEqual(await body(unknown), { message: "AI model not found" });
});

Deno.test("error leaks, MCP: a model reply that is not JSON and an upstream error are tool errors in our words", async () => {
  await using t = await answerWorld();
  t.replies.push(notJson, notJson);
  const reply = await t.mcp({ name: "ask", arguments: { ai_model_id: t.structured.id, query: "bus fares" } });
  assert.equal(reply.status, 200);
  assert.deepEqual(await body(reply), {
    jsonrpc: "2.0",
    id: 1,
    result: {
      content: [{ type: "text", text: "model output did not match the schema: the reply is not valid JSON" }],
      isError: true,
    },
  });

  t.replies.push(upstreamError);
  const upstream = await t.mcp({ name: "ask", arguments: { ai_model_id: t.text.id, query: "bus fares" } });
  assert.deepEqual(await body(upstream), {
    jsonrpc: "2.0",
    id: 1,
    result: { content: [{ type: "text", text: "AI provider rejected the request: HTTP 400" }], isError: true },
  });

  const malformed = await t.mcp(`{"jsonrpc": "2.0", "method": "${MARKER}`);
  const parsed = await body(malformed) as { error?: { code: number; message: string } };
  assert.equal(parsed.error?.code, -32700);
});

Deno.test("error leaks, widget family: malformed JSON, an upstream error, a hostile widget id", async () => {
  await using t = await answerWorld();
  const ask = { query: "bus fares", session_id: "s-1" };
  const malformed = await t.w.call(`/${t.widget.id}/ask`, { body: `{"query": "${MARKER}` });
  assert.equal(malformed.status, 422);
  assert.deepEqual(await body(malformed), { message: "Malformed JSON body: not valid JSON", code: "invalid_request" });

  t.replies.push(upstreamError);
  const upstream = await t.w.call(`/${t.widget.id}/ask`, { body: ask, headers: { accept: "application/json" } });
  assert.equal(upstream.status, 502);
  assert.deepEqual(await body(upstream), {
    message: "AI provider rejected the request: HTTP 400",
    code: "provider_failed",
  });

  const hostile = await t.w.call(`/wd_${encodeURIComponent(MARKER)}/ask`, { body: ask });
  assert.equal(hostile.status, 404);
  assert.deepEqual(await body(hostile), { message: "Widget not found", code: "widget_not_found" });
  assert.equal(hostile.headers.get("access-control-allow-origin"), null);
  void ORIGIN;
});

Deno.test("error leaks, message family: an origin's Content-Type is named, not echoed", async () => {
  await using t = await answerWorld();
  const origin = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response("<rss/>", { headers: { "content-type": `text/${MARKER}; charset=utf-8` } }),
  );
  try {
    const res = await t.w.app.request(`/v1/data-models/${t.acme.dmNews}/sources`, {
      method: "POST",
      headers: { ...bearer(t.acme.key), "content-type": "application/json" },
      body: JSON.stringify({ type: "rss", url: `http://127.0.0.1:${origin.addr.port}/feed`, interval_s: 3600 }),
    });
    assert.equal(res.status, 422);
    assert.deepEqual(await body(res), {
      message:
        "url could not be used as a source: URL returned an unsupported content type: one that is not a valid media type",
    });
  } finally {
    await origin.shutdown();
  }
});

Deno.test("error leaks, storefront and oauth families: malformed JSON and bad JWTs get our words", async () => {
  await using w = await storefrontWorld();
  const malformed = await w.app.request(`${SF}/agent/identity`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: `{"type": "${MARKER}`,
  });
  assert.equal(malformed.status, 400);
  assert.deepEqual(await body(malformed), { error: "invalid_request", detail: "The body is not valid JSON" });

  // Well-formed in shape, so it reaches jose: a payload carrying the marker, a signature of zeros.
  const b64url = (s: string) => btoa(s).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  const badJwt = [
    b64url(JSON.stringify({ alg: "ES256", typ: "at+jwt" })),
    b64url(JSON.stringify({ sub: MARKER, iss: "http://svc.test/network" })),
    "A".repeat(86),
  ].join(".");
  const token = await w.app.request(`${SF}/agent/entitlements`, { headers: { authorization: `Bearer ${badJwt}` } });
  assert.equal(token.status, 401);
  assert.deepEqual(await body(token), {
    error: "invalid_token",
    reason: "token_invalid",
    detail: "The access token did not verify: exchange the assertion again",
  });

  const jag = await w.post("/agent/identity", {
    type: "identity_assertion",
    assertion_type: ID_JAG_TOKEN_TYPE,
    assertion: badJwt,
  });
  assert.deepEqual(await body(jag), {
    error: "invalid_request",
    detail: "The assertion must have typ oauth-id-jag+jwt",
  });
  const garbled = await w.post("/agent/identity", {
    type: "identity_assertion",
    assertion_type: ID_JAG_TOKEN_TYPE,
    assertion: `${MARKER}.${MARKER}.${MARKER}`,
  });
  assert.equal(garbled.status, 400);
  assert.deepEqual(await body(garbled), { error: "invalid_request", detail: "The assertion is not a JWT" });

  const grant = await w.form("/oauth2/token", {
    grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
    assertion: badJwt,
  });
  assert.equal(grant.status, 400);
  assert.deepEqual(await body(grant), { error: "invalid_grant", error_description: "The assertion did not verify" });

  const register = await w.app.request(`${SF}/oauth2/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: `{"redirect_uris": ["${MARKER}`,
  });
  assert.equal(register.status, 400);
  assert.deepEqual(await body(register), {
    error: "invalid_client_metadata",
    error_description: "The body must be a JSON object",
  });

  const redirect = await w.post("/oauth2/register", { redirect_uris: [`javascript:${MARKER}`] });
  assert.equal(redirect.status, 400);
  assert.deepEqual(await body(redirect), {
    error: "invalid_redirect_uri",
    error_description: "a redirect URI must use https, loopback http or app scheme",
  });
});

Deno.test("error leaks, payproxy family: malformed JSON and a bad signature", async () => {
  await using w = await storefrontWorld();
  const hostileId = await w.app.request(`/payproxy/v2/search?data_model_id=${encodeURIComponent(`dm_${MARKER}`)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query: "bus fares" }),
  });
  assert.equal(hostileId.status, 400);
  assert.deepEqual(await body(hostileId), "data_model_id must start with dm_");

  const url = "/payproxy/v2/search?data_model_id=dm_x";
  const unsigned = await w.app.request(url, {
    method: "POST",
    headers: { "content-type": "application/json", "payproxy-signature": `v1=${MARKER}` },
    body: `{"query": "${MARKER}`,
  });
  assert.equal(unsigned.status, 401);
  assert.deepEqual(await body(unsigned), { error: "invalid_payproxy_signature" });

  const forged = await w.app.request(
    url,
    await signedInit({ secret: "pps_unknown", kid: "ppk_unknown", clock: w.clock, url, body: `{"q": "${MARKER}` }),
  );
  assert.equal(forged.status, 401);
  assert.deepEqual(await body(forged), { error: "invalid_payproxy_signature" });
});
