import assert from "node:assert/strict";
import { newId } from "../../core/ids.ts";
import type { AiModel, DataModel } from "../../core/store/models.ts";
import { createTestWorld } from "../_helpers.ts";
import {
  deadAddress,
  EchoAnswerService,
  FixedArticlesSearchService,
  signedInit,
  type SignedInitOptions,
  startAllowancePeer,
} from "./_helpers.ts";

const SIG_ERROR = { error: "invalid_payproxy_signature" };

/** A world with a seller secret, models of every gate, in-test search/answer services and an allowance peer. */
async function payproxyWorld({ allowanceUrl }: { allowanceUrl?: string } = {}) {
  const peer = startAllowancePeer("allow");
  const search = new FixedArticlesSearchService([
    { title: "Climate policy after the summit", url: "https://news.acme.example/a1", site: "Acme News" },
    { title: "Local elections explained", url: "https://news.acme.example/a2", site: "Acme News" },
  ]);
  const answer = new EchoAnswerService();
  const w = await createTestWorld({
    env: { AGENT_AUTH_URL: allowanceUrl ?? peer.url, ALLOWANCE_TIMEOUT_MS: "200" },
    overrides: { search, answer },
  });
  const { tenantId } = await w.tenantWithKey();
  const now = w.clock.now().toISOString();
  const dm = (over: Partial<DataModel>): Promise<DataModel> =>
    w.deps.repos.dataModels.create({
      id: newId("dm", w.clock),
      tenantId,
      name: "Acme News",
      toolName: "acme-news",
      sites: [{ domain: "news.acme.example", name: "Acme News" }],
      marketplace: true,
      createdAt: now,
      ...over,
    });
  const am = (over: Partial<AiModel>): Promise<AiModel> =>
    w.deps.repos.aiModels.create({
      id: newId("am", w.clock),
      tenantId,
      name: "Acme Assistant",
      groundingDataModelIds: [],
      provider: { kind: "extractive" },
      output: { kind: "text" },
      private: false,
      marketplace: true,
      createdAt: now,
      ...over,
    });
  const models = {
    market: await dm({}),
    unnamedTool: await dm({ toolName: undefined, name: "Café Lounge" }),
    closed: await dm({ marketplace: false }),
    text: await am({ toolName: "acme-assistant" }),
    structured: await am({ name: "Acme Facts", output: { kind: "structured", schema: { type: "object" } } }),
    private: await am({ private: true }),
    offMarket: await am({ marketplace: false }),
  };
  const key = await w.deps.payproxy.secrets.create("seller-a");
  const post = async (url: string, o: Partial<SignedInitOptions> = {}) =>
    w.app.request(url, await signedInit({ secret: key.secret, kid: key.kid, clock: w.clock, url, ...o }));
  const close = async () => {
    await peer.close();
    await w.close();
  };
  return { w, peer, models, search, answer, key, post, [Symbol.asyncDispose]: close };
}

const searchUrl = (dmId: string, extra = "") => `/payproxy/v2/search?data_model_id=${dmId}${extra}`;
const QUERY = JSON.stringify({ query: "climate policy" });

Deno.test("POST /payproxy/v2/search answers 200 with the search results and a zc-usage header", async () => {
  await using t = await payproxyWorld();
  const res = await t.post(searchUrl(t.models.market.id, "&search_version=2"), {
    body: JSON.stringify({ query: "climate policy", search_type: "keyword", similarity_top_k: 5 }),
    agentId: "agent-42",
  });
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(res.headers.get("zc-usage")!), [
    { serviceSlug: "acme-news", meterSlug: "query", quantity: 1 },
  ]);
  const body = await res.json();
  assert.equal(body.status, "success");
  assert.equal(body.response.results[0].title, "Climate policy after the summit");
  const call = t.search.calls[0]!;
  assert.equal(call.dataModelId, t.models.market.id);
  assert.equal(call.request.search_type, "keyword", "search_type reaches the pipeline");
  assert.equal(call.context.searchVersion, "2", "search_version reaches the pipeline");
  assert.equal(call.context.caller, "payproxy:agent-42");
  assert.equal(call.context.tenantId, undefined, "no tenant: nothing is counted on the platform");
  const access = t.w.log.lines.find((l) => l.msg === "request" && l.path === "/payproxy/v2/search")!;
  assert.equal(access.caller, "payproxy:agent-42");
  assert.equal(access.tenant, null);
  // The allowance call named the agent and the service.
  assert.deepEqual(JSON.parse(new TextDecoder().decode(t.peer.calls[0]!.body)), {
    agentId: "agent-42",
    serviceSlug: "acme-news",
    usage: [{ meterSlug: "query", quantity: 1 }],
  });
});

Deno.test("POST /payproxy/v2/search uses a slug of the model name when it has no tool name", async () => {
  await using t = await payproxyWorld();
  const res = await t.post(searchUrl(t.models.unnamedTool.id), { body: QUERY });
  assert.equal(res.status, 200);
  assert.equal(JSON.parse(res.headers.get("zc-usage")!)[0].serviceSlug, "cafe-lounge");
});

Deno.test("POST /payproxy/v2/search with a missing data_model_id or unknown search_version is 400 text/plain, before the signature", async () => {
  await using t = await payproxyWorld();
  for (
    const url of ["/payproxy/v2/search", "/payproxy/v2/search?data_model_id=", "/payproxy/v2/search?data_model_id=am_x"]
  ) {
    const res = await t.w.app.request(url, { method: "POST", body: QUERY });
    assert.equal(res.status, 400);
    assert.match(res.headers.get("content-type")!, /^text\/plain/);
    assert.match(await res.text(), /data_model_id/);
  }
  const res = await t.w.app.request(searchUrl(t.models.market.id, "&search_version=9"), {
    method: "POST",
    body: QUERY,
  });
  assert.equal(res.status, 400);
  assert.equal(await res.text(), "search_version must be one of 1, 2, v1, v2");
});

Deno.test("payproxy routes answer every signature problem with the same 401 body", async (t) => {
  await using w = await payproxyWorld();
  const url = searchUrl(w.models.market.id);
  const good = await signedInit({ secret: w.key.secret, kid: w.key.kid, clock: w.w.clock, url, body: QUERY });
  const headers = good.headers as Record<string, string>;
  const without = (name: string) => Object.fromEntries(Object.entries(headers).filter(([k]) => k !== name));
  const cases: [string, RequestInit, RegExp][] = [
    ["no zc-signature", { ...good, headers: without("zc-signature") }, /header is missing/],
    ["no zc-request-id", { ...good, headers: without("zc-request-id") }, /zc-request-id is missing/],
    ["a tampered body", { ...good, body: JSON.stringify({ query: "other" }) }, /does not match/],
    ["an unknown part", {
      ...good,
      headers: { ...headers, "zc-signature": headers["zc-signature"] + ",v0=1" },
    }, /unknown part/],
    ["an API key instead", { method: "POST", body: QUERY, headers: { authorization: "Bearer ak_x" } }, /missing/],
  ];
  for (const [name, init, why] of cases) {
    await t.step(name, async () => {
      const res = await w.w.app.request(url, init);
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), SIG_ERROR);
      const logged = w.w.log.lines.findLast((l) => l.msg === "request rejected")!;
      assert.equal(logged.code, "invalid_payproxy_signature");
      assert.match(String(logged.why), /^SignatureError: /);
      assert.match(String(logged.why), why);
      assert.ok(!JSON.stringify(logged).includes(w.key.secret));
    });
  }
  await t.step("a timestamp 301 s old", async () => {
    const res = await w.post(url, { body: QUERY, tOffset: -301 });
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), SIG_ERROR);
    assert.match(String(w.w.log.lines.findLast((l) => l.msg === "request rejected")!.why), /timestamp/);
  });
  await t.step("a kid with no configured secret", async () => {
    const res = await w.w.app.request(
      url,
      await signedInit({ secret: "pps_unknown", kid: "ppk_unknown", clock: w.w.clock, url, body: QUERY }),
    );
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), SIG_ERROR);
  });
  await t.step("a replay of a request that verified", async () => {
    const init = await signedInit({ secret: w.key.secret, kid: w.key.kid, clock: w.w.clock, url, body: QUERY });
    assert.equal((await w.w.app.request(url, init)).status, 200);
    const again = await w.w.app.request(url, init);
    assert.equal(again.status, 401);
    assert.deepEqual(await again.json(), SIG_ERROR);
    assert.match(String(w.w.log.lines.findLast((l) => l.msg === "request rejected")!.why), /already used/);
  });
  await t.step("a retired secret", async () => {
    await w.w.deps.payproxy.secrets.rotate("seller-a");
    await w.w.deps.payproxy.secrets.retire("seller-a");
    const res = await w.post(url, { body: QUERY });
    assert.equal(res.status, 401);
  });
  assert.equal(w.search.calls.length, 1, "only the one verified request reached the search");
  assert.ok(w.w.deps.payproxy.metrics.requests.rejected >= 8);
});

Deno.test("payproxy routes answer a replay with 401 even when its body or model would be refused", async (t) => {
  await using w = await payproxyWorld();
  const replayed = async (url: string, body: string) => {
    const init = await signedInit({ secret: w.key.secret, kid: w.key.kid, clock: w.w.clock, url, body });
    const first = await w.w.app.request(url, init);
    const again = await w.w.app.request(url, init);
    return { first: first.status, again: again.status, body: await again.json() };
  };
  await t.step("an empty query (422 the first time)", async () => {
    const r = await replayed(searchUrl(w.models.market.id), JSON.stringify({ query: "" }));
    assert.deepEqual(r, { first: 422, again: 401, body: SIG_ERROR });
  });
  await t.step("a data model off the marketplace (404 the first time)", async () => {
    const r = await replayed(searchUrl(w.models.closed.id), QUERY);
    assert.deepEqual(r, { first: 404, again: 401, body: SIG_ERROR });
  });
  await t.step("a malformed AI model id (422 the first time)", async () => {
    const r = await replayed("/payproxy/aimodel/am_bad-id", QUERY);
    assert.deepEqual(r, { first: 422, again: 401, body: SIG_ERROR });
  });
  await t.step("a served request: the replay reaches neither the payment layer nor the search", async () => {
    const calls = w.peer.calls.length;
    const r = await replayed(searchUrl(w.models.market.id), JSON.stringify({ query: "local elections" }));
    assert.deepEqual(r, { first: 200, again: 401, body: SIG_ERROR });
    assert.equal(w.search.calls.length, 1);
    assert.ok(w.peer.calls.length <= calls + 1, "at most the first request asked for an allowance");
  });
  const metrics = w.w.deps.payproxy.metrics.requests;
  assert.equal(metrics.verified, 4, "first uses only");
  assert.equal(metrics.rejected, 4, "every replay");
});

Deno.test("POST /payproxy/v2/search answers 401 without results or zc-usage when another process used the signature first", async () => {
  await using w = await payproxyWorld();
  const url = searchUrl(w.models.market.id);
  const init = await signedInit({ secret: w.key.secret, kid: w.key.kid, clock: w.w.clock, url, body: QUERY });
  // Another process behind the load balancer served this signature a moment ago: its mark is in KV.
  const [, t, v1] = /t=(\d+),.*v1=([0-9a-f]{64})/.exec(new Headers(init.headers).get("zc-signature")!)!;
  await w.w.deps.kv.set(["payproxy_replay", Number(t), w.key.kid, v1!], 1);
  const res = await w.w.app.request(url, init);
  assert.equal(res.status, 401);
  assert.deepEqual(await res.json(), SIG_ERROR);
  assert.equal(res.headers.get("zc-usage"), null);
  assert.equal(w.w.deps.payproxy.metrics.requests.served, 0);
  assert.equal(w.w.deps.payproxy.metrics.requests.rejected, 1);
});

Deno.test("POST /payproxy/v2/search answers 422 {message, code} for bodies it cannot use", async () => {
  await using t = await payproxyWorld();
  const url = searchUrl(t.models.market.id);
  const cases: [string, string, string][] = [
    ["{not json", "invalid_body", "Request body could not be decoded"],
    ["", "invalid_body", "Request body could not be decoded"],
    ["[1,2]", "invalid_body", "Request body must be a JSON object"],
    [JSON.stringify({ query: "" }), "empty_query", "query cannot be empty"],
    [JSON.stringify({ query: "   " }), "empty_query", "query cannot be empty"],
    [JSON.stringify({}), "empty_query", "query cannot be empty"],
    [JSON.stringify({ query: "x", page: 0 }), "invalid_request", "page"],
    [JSON.stringify({ query: "x", search_type: "fuzzy" }), "invalid_request", "search_type must be one of"],
  ];
  for (const [body, code, message] of cases) {
    const res = await t.post(url, { body });
    assert.equal(res.status, 422, body);
    const got = await res.json();
    assert.equal(got.code, code);
    assert.ok(got.message.startsWith(message), `${got.message} starts with ${message}`);
  }
  const bytes = new Uint8Array([0x7b, 0xff, 0x7d]);
  const res = await t.post(url, { body: bytes });
  assert.equal(res.status, 422);
  assert.equal((await res.json()).code, "invalid_body");
  assert.equal(t.peer.calls.length, 0, "no allowance call for an unusable body");
});

Deno.test("POST /payproxy/v2/search answers an empty 404 for unknown and non-marketplace data models", async () => {
  await using t = await payproxyWorld();
  for (const id of [t.models.closed.id, newId("dm", t.w.clock)]) {
    const res = await t.post(searchUrl(id), { body: QUERY });
    assert.equal(res.status, 404);
    assert.equal(await res.text(), "");
  }
  assert.equal(t.peer.calls.length, 0);
  assert.equal(t.search.calls.length, 0);
});

Deno.test("POST /payproxy/v2/search answers 402 payment_required when the allowance is denied", async () => {
  await using t = await payproxyWorld();
  t.peer.mode = "deny";
  const res = await t.post(searchUrl(t.models.market.id), { body: QUERY, agentId: "agent-broke" });
  assert.equal(res.status, 402);
  assert.deepEqual(await res.json(), {
    error: "payment_required",
    serviceSlug: "acme-news",
    usage: [{ meterSlug: "query", quantity: 1 }],
  });
  assert.equal(res.headers.get("zc-usage"), null);
  assert.equal(t.search.calls.length, 0, "no billable work after a denial");
});

Deno.test("POST /payproxy/v2/search fails open when the payment layer is down, and counts it", async () => {
  await using t = await payproxyWorld({ allowanceUrl: await deadAddress() });
  const res = await t.post(searchUrl(t.models.market.id), { body: QUERY });
  assert.equal(res.status, 200);
  assert.ok(res.headers.get("zc-usage"));
  assert.ok(t.w.log.lines.some((l) => l.msg === "allowance check failed open" && l.level === "warn"));
  const { key } = await t.w.deps.operatorKeys.create();
  const metrics = await (await t.w.app.request("/payproxy/metrics", { headers: { authorization: `Bearer ${key}` } }))
    .json();
  assert.equal(metrics.allowance.failOpen, 1);
  assert.equal(metrics.allowance.failOpenByReason.unreachable, 1);
  assert.equal(metrics.requests.served, 1);
});

Deno.test("POST /payproxy/v2/search fails open when the payment layer is slow", async () => {
  await using t = await payproxyWorld();
  t.peer.mode = "slow";
  const res = await t.post(searchUrl(t.models.market.id), { body: QUERY });
  assert.equal(res.status, 200);
  assert.equal(t.w.deps.payproxy.metrics.allowance.failOpenByReason.timeout, 1);
});

Deno.test("POST /payproxy/v2/search answers an empty 500 when the search fails unexpectedly", async () => {
  await using t = await payproxyWorld();
  t.search.failWith = new Error("index exploded");
  const res = await t.post(searchUrl(t.models.market.id), { body: QUERY });
  assert.equal(res.status, 500);
  assert.equal(await res.text(), "");
  assert.ok(t.w.log.lines.some((l) => l.msg === "unexpected error" && String(l.error).includes("index exploded")));
});

Deno.test("POST /payproxy/aimodel/{id} answers {message, citations} with zc-usage for a text model", async () => {
  await using t = await payproxyWorld();
  const res = await t.post(`/payproxy/aimodel/${t.models.text.id}`, {
    body: JSON.stringify({ query: "What happened at the summit?" }),
    agentId: "agent-7",
  });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { message: "Answer to: What happened at the summit?", citations: [] });
  assert.deepEqual(JSON.parse(res.headers.get("zc-usage")!), [
    { serviceSlug: "acme-assistant", meterSlug: "query", quantity: 1 },
  ]);
  assert.equal(t.answer.calls[0]!.context.caller, "payproxy:agent-7");
  assert.equal(t.answer.calls[0]!.context.tenantId, undefined);
});

Deno.test("POST /payproxy/aimodel/{id} emits a structured model's payload directly", async () => {
  await using t = await payproxyWorld();
  const res = await t.post(`/payproxy/aimodel/${t.models.structured.id}`, { body: JSON.stringify({ query: "facts" }) });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { answer: "Answer to: facts", confidence: 0.5 });
  assert.equal(JSON.parse(res.headers.get("zc-usage")!)[0].serviceSlug, "acme-facts");
  const access = t.w.log.lines.findLast((l) => l.msg === "request")!;
  assert.equal(access.caller, "payproxy", "no agent id: plain payproxy caller");
});

Deno.test("POST /payproxy/aimodel/{id} answers 422 for a malformed id or query, after the signature", async () => {
  await using t = await payproxyWorld();
  let res = await t.post("/payproxy/aimodel/dm_wrongprefix", { body: JSON.stringify({ query: "x" }) });
  assert.equal(res.status, 422);
  assert.deepEqual(await res.json(), {
    message: "aimodelExternalId is not in the correct format",
    code: "invalid_model_id",
  });
  res = await t.post(`/payproxy/aimodel/${t.models.text.id}`, { body: JSON.stringify({ query: "" }) });
  assert.equal(res.status, 422);
  assert.deepEqual(await res.json(), { message: "query cannot be empty", code: "empty_query" });
  res = await t.post(`/payproxy/aimodel/${t.models.text.id}`, { body: JSON.stringify({ query: "x".repeat(2001) }) });
  assert.equal(res.status, 422);
  assert.equal((await res.json()).code, "query_too_long");
  res = await t.w.app.request("/payproxy/aimodel/dm_wrongprefix", { method: "POST", body: "{}" });
  assert.equal(res.status, 401, "unsigned callers learn nothing about the id");
});

Deno.test("POST /payproxy/aimodel/{id} answers an empty 404 for private, off-market and unknown models", async () => {
  await using t = await payproxyWorld();
  for (const id of [t.models.private.id, t.models.offMarket.id, newId("am", t.w.clock)]) {
    const res = await t.post(`/payproxy/aimodel/${id}`, { body: JSON.stringify({ query: "x" }) });
    assert.equal(res.status, 404);
    assert.equal(await res.text(), "");
  }
  assert.match(String(t.w.log.lines.find((l) => l.msg === "request rejected")!.why), /private/);
  assert.equal(t.answer.calls.length, 0);
});

Deno.test("POST /payproxy/aimodel/{id} answers 402 when the allowance is denied", async () => {
  await using t = await payproxyWorld();
  t.peer.mode = "deny";
  const res = await t.post(`/payproxy/aimodel/${t.models.text.id}`, { body: JSON.stringify({ query: "x" }) });
  assert.equal(res.status, 402);
  assert.deepEqual(await res.json(), {
    error: "payment_required",
    serviceSlug: "acme-assistant",
    usage: [{ meterSlug: "query", quantity: 1 }],
  });
});

Deno.test("payproxy routes verify over a real HTTP server (raw URL as received)", async () => {
  await using t = await payproxyWorld();
  const { startServer } = await import("../../routes/server.ts");
  const server = startServer(t.w.app.fetch);
  try {
    const url = `${server.url}${
      searchUrl(t.models.market.id, "&search_version=1&note=caf%C3%A9%20cr%C3%A8me&x=1&x=2&q=it's")
    }`;
    const res = await fetch(
      url,
      await signedInit({ secret: t.key.secret, kid: t.key.kid, clock: t.w.clock, url, body: QUERY }),
    );
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.equal(t.search.calls[0]!.context.searchVersion, "1");
  } finally {
    await server.shutdown(1000);
  }
});

Deno.test("GET /openapi.json documents both payproxy routes and their signed headers", async () => {
  await using t = await payproxyWorld();
  const doc = await (await t.w.app.request("/openapi.json")).json();
  const search = doc.paths["/payproxy/v2/search"].post;
  const realtime = doc.paths["/payproxy/aimodel/{aimodel_external_id}"].post;
  for (const op of [search, realtime]) {
    const headers = op.parameters.filter((p: { in: string }) => p.in === "header").map((p: { name: string }) => p.name);
    assert.deepEqual(headers.sort(), ["zc-agent-id", "zc-request-id", "zc-signature"]);
    assert.ok(op.responses["401"] && op.responses["402"] && op.responses["404"] && op.responses["422"]);
    assert.ok(op.responses["200"].headers["zc-usage"]);
  }
  assert.ok(search.responses["400"].content["text/plain"]);
});

Deno.test("payproxy routes answer an oversized body with 422 {message, code}", async () => {
  await using w = await createTestWorld({ env: { MAX_BODY_BYTES: "1024" } });
  // Signed: a request whose signature headers cannot verify is refused (401) before its body is read.
  const key = await w.deps.payproxy.secrets.create("seller-a");
  for (const url of ["/payproxy/v2/search?data_model_id=dm_x", "/payproxy/aimodel/am_x"]) {
    const oversized = JSON.stringify({ query: "x".repeat(2000) });
    const res = await w.app.request(
      url,
      await signedInit({ secret: key.secret, kid: key.kid, clock: w.clock, url, body: oversized }),
    );
    assert.equal(res.status, 422);
    const body = await res.json();
    assert.equal(body.code, "body_too_large");
    assert.match(body.message, /1024 bytes/);
  }
});

Deno.test("payproxy routes refuse a signature that cannot verify without the body (header, ids, timestamp, key) before the body is read", async (t) => {
  await using w = await payproxyWorld();
  const routes = [searchUrl(w.models.market.id), `/payproxy/aimodel/${w.models.text.id}`];
  for (const url of routes) {
    const good = await signedInit({ secret: w.key.secret, kid: w.key.kid, clock: w.w.clock, url, body: QUERY });
    const headers = good.headers as Record<string, string>;
    const without = (name: string) => Object.fromEntries(Object.entries(headers).filter(([k]) => k !== name));
    const stale = await signedInit({ secret: w.key.secret, kid: w.key.kid, clock: w.w.clock, url, tOffset: -301 });
    const unknown = await signedInit({ secret: "pps_unknown", kid: "ppk_unknown", clock: w.w.clock, url });
    const cases: [string, Record<string, string>][] = [
      ["no zc-signature", without("zc-signature")],
      ["no zc-request-id", without("zc-request-id")],
      ["a timestamp 301 s old", stale.headers as Record<string, string>],
      ["a kid with no configured secret", unknown.headers as Record<string, string>],
    ];
    for (const [name, sent] of cases) {
      await t.step(`${url.split("?")[0]}: ${name}`, async () => {
        let pulled = false;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            pulled = true;
            controller.enqueue(new TextEncoder().encode(QUERY));
            controller.close();
          },
        }, { highWaterMark: 0 });
        const res = await w.w.app.request(url, { method: "POST", headers: sent, body });
        assert.equal(res.status, 401);
        assert.deepEqual(await res.json(), SIG_ERROR);
        assert.equal(pulled, false, "the body was not read");
      });
    }
  }
  assert.equal(w.search.calls.length, 0);
});
