/**
 * Issue 24, findings 6 and 7 (the lows and notes) and `deno task fixtures --help`: one test per
 * finding, each of which failed on the code before its fix (docs/security.md lists them).
 */
import assert from "node:assert/strict";
import { Challenge, Credential, Receipt } from "mppx";
import type { McpError } from "@modelcontextprotocol/sdk/types.js";
import { csvCell } from "../../analytics/export.ts";
import { SANDBOX_TOKENS, type SandboxProcessor } from "../../core/commerce/processor.ts";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import { newId } from "../../core/ids.ts";
import { main as fixturesCli } from "../../fixtures/events_cli.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { analyticsWorld, parseCsv } from "../analytics/_fixture.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "../commerce/_helpers.ts";
import { mcpWorld } from "../mcp/_world.ts";
import { json, storefrontWorld } from "../storefront/_world.ts";

Deno.test("security: a pay-as-you-go call whose upstream errs is refunded automatically, with a receipt that says so", async () => {
  await using w = await createCommerceWorld({ upstream: true, withPlan: false });
  await w.addPayg(20_000);
  const { token } = await w.agents.issue();
  const processor = w.deps.commerce.processor as SandboxProcessor;
  const paidSearch = async () => {
    const first = await w.req(`/v2/search?data_model_id=${w.dataModelId}`, { ...postJson({ query: "rates" }), token });
    assert.equal(first.status, 402);
    await first.body?.cancel();
    const ch = challengesOf(first)[0]!;
    const res = await w.req(`/v2/search?data_model_id=${w.dataModelId}`, {
      ...postJson({ query: "rates" }, {
        authorization: paymentAuthorization(ch, { token: SANDBOX_TOKENS.wallet.success }),
        "zc-agent-authorization": `Bearer ${token}`,
      }),
    });
    const record = (await w.deps.kv.get<PaymentRecord>(["commerce_payment", w.sellerId, ch.id])).value!;
    return { res, record };
  };

  w.upstream.mode = "error";
  const failed = await paidSearch();
  assert.equal(failed.res.status, 500, "the upstream's own status and body go back");
  assert.deepEqual(await failed.res.json(), { message: "upstream broke" });
  const receipt = Receipt.deserialize(failed.res.headers.get("payment-receipt")!) as Record<string, unknown>;
  assert.deepEqual(
    { ...(receipt.refund as object), refundRef: undefined },
    { status: "refunded", reason: "upstream_error", refundRef: undefined },
  );
  assert.equal(failed.record.state, "refunded");
  assert.equal(failed.record.refundReason, "upstream_error");
  assert.deepEqual(processor.refunds.map((r) => [r.reference, r.amountMicros]), [[failed.record.reference, 20_000]]);

  // A call the upstream answers is charged and stays charged.
  w.upstream.mode = "ok";
  const served = await paidSearch();
  assert.equal(served.res.status, 200);
  await served.res.body?.cancel();
  assert.equal(
    (Receipt.deserialize(served.res.headers.get("payment-receipt")!) as Record<string, unknown>).refund,
    undefined,
  );
  assert.equal(served.record.state, "consumed");
  assert.equal(processor.refunds.length, 1);
  assert.equal(processor.ledger.length, 2, "both calls were charged; the failed one was given back");
});

Deno.test("security: click events naming another tenant's article ids do not read its titles", async () => {
  await using w = await createTestWorld();
  const mine = await w.tenantWithKey("Attacker Media");
  const theirs = await w.tenantWithKey("Victim Media");
  const now = w.clock.now().toISOString();
  const dataModel = async (tenantId: string, title: string, url: string) => {
    const dm = await w.deps.repos.dataModels.create({
      id: newId("dm", w.clock),
      tenantId,
      name: title,
      sites: [],
      marketplace: false,
      createdAt: now,
    });
    const report = await w.deps.search.ingest(dm, [{ url, title, body: `${title}. Body text of the article.` }]);
    return { dm: dm.id, article: report.results[0]!.id!, url };
  };
  const own = await dataModel(mine.tenantId, "Our own story", "https://ours.example/own");
  const secret = await dataModel(theirs.tenantId, "Unpublished merger of Acme and Initech", "https://theirs.example/s");
  const click = (a: { dm: string; article: string; url: string }) => ({
    event_type: "click",
    click_type: "article",
    data_model_id: a.dm,
    article_id: a.article,
    article_url: a.url,
  });
  const sent = await w.app.request("/v1/events", {
    method: "POST",
    headers: { ...bearer(mine.key), "content-type": "application/json" },
    body: JSON.stringify({ events: [click(own), click(secret)] }),
  });
  assert.equal(sent.status, 202);
  await sent.body?.cancel();
  await w.deps.events.flush();
  const day = now.slice(0, 10);
  const res = await w.app.request(`/v1/analytics/articles?start_date=${day}&end_date=${day}`, {
    headers: bearer(mine.key),
  });
  assert.equal(res.status, 200);
  const titles = Object.fromEntries(
    (await res.json()).articles.map((a: { article_id: string; title: string }) => [a.article_id, a.title]),
  );
  assert.deepEqual(titles, { [own.article]: "Our own story", [secret.article]: "" });
});

Deno.test("security: malformed or unknown ids are refused before any lookup and never echoed", async () => {
  await using w = await createTestWorld();
  const { key } = await w.tenantWithKey();
  const huge = "dm_" + "a".repeat(60_000);
  const unknown = "dm_Zq9NoSuchModelEcho";
  const unknownAm = "am_Zq9NoSuchModelEcho";
  const send = (method: string, path: string, body?: unknown) =>
    w.app.request(path, {
      method,
      headers: { ...bearer(key), "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const probes = (id: string): [string, string, unknown?][] => [
    ["POST", `/app/v2/search?data_model_id=${id}`, { query: "x" }],
    ["POST", `/app/datamodel/${id}`, { query: "x" }],
    ["POST", `/v1/data-models/${id}/articles`, []],
    ["POST", `/v1/data-models/${id}/sources`, { type: "rss", url: "https://feeds.example/rss", interval_s: 600 }],
    ["GET", `/v1/data-models/${id}/sources`],
    ["GET", `/v1/data-models/${id}/sources/src_x`],
    ["GET", `/v1/data-models/${id}/retention`],
    ["PUT", `/v1/data-models/${id}/retention`, { max_age_days: 30 }],
    ["GET", `/v1/analytics/articles?data_model_id=${id}`],
    ["GET", `/v1/analytics/ask-ai?widget_id=${id.replace("dm_", "wd_")}`],
    ["GET", `/v1/analytics/sponsored-conversations?agent_id=${id.replace("dm_", "am_")}`],
    ["POST", "/v1/events", { events: [{ event_type: "widget_load", widget_id: id.replace("dm_", "wd_") }] }],
    ["POST", "/v1/events", { events: [{ event_type: "query", prompt: "q", ai_agent: id.replace("dm_", "am_") }] }],
  ];
  const seen: string[] = [];
  // A well-formed unknown campaign_id is an empty answer whose `filters` echo it (spec 2.7); a malformed one is a 400.
  const malformedOnly: [string, string][] = [
    ["GET", `/v1/analytics/sponsored-conversations?campaign_id=${huge.replace("dm_", "cp_")}`],
  ];
  for (const [method, path, body] of [...probes(huge), ...malformedOnly, ...probes(unknown)]) {
    const res = await send(method, path, body);
    const text = await res.text();
    seen.push(`${res.status} ${method} ${path.slice(0, 60)}: ${text.slice(0, 120)}`);
    assert.ok(res.status >= 400 && res.status < 500, seen.at(-1));
    assert.ok(!text.includes("aaaaaaaaaa") && !text.includes("Zq9NoSuch"), `echoed: ${seen.at(-1)}`);
  }
  // The unknown (well-formed) ones are the 404 every missing data model gets.
  const notFound = await send("POST", `/v1/data-models/${unknown}/articles`, []);
  assert.equal(notFound.status, 404);
  assert.deepEqual(await notFound.json(), { message: "Data model not found" });
  const badFormat = await send("POST", `/app/v2/search?data_model_id=${huge}`, { query: "x" });
  assert.equal(badFormat.status, 400);
  assert.equal(await badFormat.text(), "data_model_id must be dm_ followed by 1 to 64 letters and digits");
  for (const id of [unknownAm, "am_" + "a".repeat(60_000)]) {
    const res = await send("POST", `/app/aimodel/${id}`, { query: "x" });
    const text = await res.text();
    assert.ok(res.status >= 400 && res.status < 500, text);
    assert.ok(!text.includes("aaaaaaaaaa") && !text.includes("Zq9NoSuch"), text);
  }
  // Straight at the store: a huge id is no KV read ("Key too large"), just not found.
  assert.equal(await w.deps.repos.dataModels.get(huge), null);
  assert.equal(await w.deps.repos.widgets.get("wd_" + "b".repeat(60_000)), null);
});

Deno.test("security: claim e-mails are limited per recipient address and per seller, whatever the claim or client", async () => {
  await using w = await storefrontWorld({
    env: { CLAIM_MAIL_PER_ADDRESS: "3", CLAIM_MAIL_PER_SELLER: "5", CLAIM_MAIL_WINDOW_S: "3600", TRUST_PROXY: "1" },
  });
  const mails = async () =>
    (await (w.deps.mailer as unknown as { list(n: number): Promise<unknown[]> }).list(100)).length;
  // Each request from a fresh claim (so the per-claim cap never applies) and a fresh client address.
  const claimMail = async (email: string, i: number) => {
    const ip = { "x-forwarded-for": `198.51.100.${i}` };
    const reg = await json(await w.post("/agent/identity", { type: "service_auth", login_hint: email }, ip));
    assert.equal(reg.status, 200, JSON.stringify(reg.body));
    const claimToken = (reg.body.claim as { token: string }).token;
    const res = await w.post(
      "/agent/identity/claim",
      { type: "service_auth", claim_token: claimToken, login_hint: email },
      ip,
    );
    return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
  };
  // Dotted spellings reach one Gmail mailbox: they count as one address.
  const spellings = [
    "victim@gmail.com",
    "v.ictim@gmail.com",
    "Vic.tim@googlemail.com",
    "victi.m@gmail.com",
    "victim@gmail.com",
  ];
  const toVictim = [];
  for (const [i, email] of spellings.entries()) toVictim.push(await claimMail(email, i));
  assert.deepEqual(toVictim.map((r) => r.status), [200, 200, 200, 429, 429]);
  assert.equal(toVictim[3]!.body.error, "rate_limit_exceeded");
  assert.ok(Number(toVictim[3]!.retryAfter) > 0);
  assert.ok(!JSON.stringify(toVictim[3]!.body).includes("victim"), "the address is not echoed");
  assert.equal(await mails(), 3);
  // Other addresses: the seller's budget (5 in all) runs out after two more.
  const spread = [];
  for (let i = 0; i < 3; i++) spread.push((await claimMail(`person${i}@example.com`, 10 + i)).status);
  assert.deepEqual(spread, [200, 200, 429]);
  assert.equal(await mails(), 5);
  // A new window lets mail through again.
  w.clock.advance(3_600_000);
  assert.equal((await claimMail("victim@gmail.com", 20)).status, 200);
});

Deno.test("security: /payproxy/metrics without an operator key answers the operator's 401, not the signature body", async () => {
  await using w = await createTestWorld();
  for (const authorization of [undefined, "Bearer op_" + "A".repeat(43), "Basic x"]) {
    const res = await w.app.request("/payproxy/metrics", { headers: authorization ? { authorization } : {} });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="operator"');
    assert.deepEqual(await res.json(), { message: "An operator key is required: Authorization: Bearer op_..." });
  }
  // The signed routes keep the payproxy body.
  const signed = await w.app.request("/payproxy/v2/search?data_model_id=dm_x", { method: "POST", body: "{}" });
  assert.deepEqual(await signed.json(), { error: "invalid_payproxy_signature" });
});

Deno.test("security: the CSV formula guard catches a formula behind a BOM, blanks, zero-width characters or line breaks", async () => {
  const hostile = [
    '\uFEFF=HYPERLINK("http://evil.example","x")',
    " =1+1",
    "   +1+1",
    "\t-2+3",
    "\n=1+1",
    "\r\n@SUM(A1)",
    "\u00a0=1",
    "\u200b=1",
    "\u3000=1",
    "\r",
    "\t",
    "\nplain text after a newline",
  ];
  for (const p of hostile) assert.ok(csvCell(p).startsWith(`"'`), JSON.stringify(p));
  for (const p of ["plain", " plain", "a=b", "\uFEFFplain", "007"]) assert.ok(!csvCell(p).startsWith(`"'`), p);

  // The logs export writes its cells in SQL: the same rule there.
  await using world = await analyticsWorld();
  await world.w.deps.events.record(hostile.map((prompt, i) => ({
    event_type: "query",
    ts: `2026-11-22T09:${String(i).padStart(2, "0")}:00Z`,
    ai_agent: "am_main",
    interaction_type: "free_form",
    prompt,
    response: "ok",
  })));
  await world.w.deps.events.flush();
  const res = await world.w.app.request("/v1/analytics/ask-ai/logs?format=csv&start_date=2026-11-22", {
    headers: bearer(world.key),
  });
  assert.equal(res.status, 200);
  const rows = parseCsv(await res.text()).slice(1);
  assert.deepEqual(rows.map((r) => r[7]).sort(), hostile.map((p) => "'" + p).sort());
});

Deno.test("security: an MCP payment with an already-spent credential says payment_consumed", async () => {
  await using w = await mcpWorld();
  const { token } = await w.agents.issue();
  const client = await w.connect(`Bearer ${token}`);
  const args = { data_model_id: w.ids.dataModelId, query: "council budget" };
  const challengesFor = async () => {
    const err = await client.callTool({ name: "search_articles", arguments: args }).then(() => null, (e: unknown) => e);
    return ((err as McpError).data as { challenges: Challenge.Challenge[] }).challenges;
  };
  const pay = (challenge: Challenge.Challenge) => ({
    "org.paymentauth/credential": Credential.from({ challenge, payload: { token: SANDBOX_TOKENS.wallet.success } }),
  });
  const textOf = (r: { content: unknown }) => (r.content as { text: string }[])[0]!.text;

  // Pay per call: the credential pays once; spent, it is named as such.
  const perCall = pay((await challengesFor()).find((c) => c.request.action === "call")!);
  assert.equal(
    (await client.callTool({ name: "search_articles", arguments: args, _meta: perCall })).isError,
    undefined,
  );
  const replayed = await client.callTool({ name: "search_articles", arguments: args, _meta: perCall });
  assert.equal(replayed.isError, true);
  assert.match(textOf(replayed), /^payment_consumed: /);

  // A purchase: buy credit once, spend it, and present the spent purchase credential again.
  await w.buyCredit(token, "0.100000");
  for (let i = 0; i < 10; i++) await client.callTool({ name: "search_articles", arguments: args });
  const purchase = pay((await challengesFor()).find((c) => c.request.action === "purchase")!);
  assert.equal(
    (await client.callTool({ name: "search_articles", arguments: args, _meta: purchase })).isError,
    undefined,
  );
  const again = await client.callTool({ name: "search_articles", arguments: args, _meta: purchase });
  assert.equal(again.isError, true);
  assert.match(textOf(again), /^payment_consumed: /);
  assert.doesNotMatch(textOf(again), /unfinished|did not complete/i);
});

Deno.test("security: a widget event carrying tenant_id or agent_identity is refused with 422 naming the field", async () => {
  await using world = await analyticsWorld();
  const post = (events: Record<string, unknown>[], headers: Record<string, string>) =>
    world.w.app.request("/v1/events", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ widget_id: "wd_main", events }),
    });
  const widget = { origin: "https://news.example" };
  const forged: [string, Record<string, unknown>][] = [
    ["tenant_id", { event_type: "widget_load", session_id: "s1", tenant_id: world.other.tenantId }],
    ["agent_identity", { event_type: "widget_load", session_id: "s1", agent_identity: "payproxy:forged-bot-77" }],
  ];
  for (const [field, event] of forged) {
    const res = await post([{ event_type: "widget_load", session_id: "s1" }, event], widget);
    assert.equal(res.status, 422, field);
    const body = await res.json();
    assert.equal(body.message, `events.1.${field}: is set by the service, not sent by a widget`);
    assert.ok(!JSON.stringify(body).includes(String(event[field])), "the value is not echoed");
  }
  assert.equal((await world.w.deps.events.flush()).rows, 0, "nothing of a refused batch is stored");
  // Server events with the tenant's key: the key's tenant, as before.
  const server = await post([{ event_type: "widget_load", session_id: "s2", tenant_id: world.other.tenantId }], {
    ...bearer(world.key),
  });
  assert.equal(server.status, 202);
  await server.body?.cancel();
});

Deno.test("security: deno task fixtures --help prints the usage and exits 0", async () => {
  const printed: string[] = [];
  const log = console.log;
  console.log = (...a: unknown[]) => void printed.push(a.join(" "));
  try {
    assert.equal(await fixturesCli(["--help"]), 0);
    assert.equal(await fixturesCli(["-h"]), 0);
  } finally {
    console.log = log;
  }
  assert.equal(printed.length, 2);
  assert.match(printed[0]!, /^usage: deno task fixtures --days D --events N --out DIR/);
});
