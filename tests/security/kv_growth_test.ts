/**
 * Nothing an outsider can make the service write for free is kept in KV for good. A `:memory:` KV
 * shows no expiry, so these tests read the lifetime each write asked for (`tests/_kv_writes.ts`):
 * every key a flow writes must be one KV drops in time, or be named here with why it stays.
 */
import assert from "node:assert/strict";
import { Mppx } from "mppx/client";
import { evm } from "mppx/evm/client";
import { x402Client } from "@x402/core/client";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";
import { FixedClock } from "../../core/clock.ts";
import { CHECKOUT_TTL_MS } from "../../core/commerce/checkout.ts";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "../commerce/_helpers.ts";
import type { PaymentRecord } from "../../core/commerce/payments.ts";
import { LOCAL_CHAIN_ID, LOCAL_KEYS, TOKEN_DOMAIN } from "../../fixtures/chain/local.ts";
import { consent } from "../mcp/_consent.ts";
import { keptForGood, recordKvWrites } from "../_kv_writes.ts";
import { SF, storefrontWorld } from "../storefront/_world.ts";

const DAY_MS = 86_400_000;
const REDIRECT = "http://127.0.0.1:53682/callback";

/** Opens a hosted checkout page and submits its form the way a browser does (CSRF field, cookie, Origin). */
async function submitCheckoutForm(
  w: Awaited<ReturnType<typeof createCommerceWorld>>,
  url: string,
  fields: Record<string, string>,
): Promise<Response> {
  const page = await w.app.request(url, { headers: { host: w.host } });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
  const cookie = page.headers.get("set-cookie")?.split(";")[0] ?? "";
  return await w.app.request(url, {
    method: "POST",
    headers: {
      host: w.host,
      cookie,
      origin: `http://${w.host}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ csrf, ...fields }).toString(),
  });
}

/** S256 of a PKCE verifier, base64url. */
async function s256(verifier: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return btoa(String.fromCharCode(...digest)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

Deno.test("OAuth: an anonymous consent, its code grant and its refreshes write nothing KV keeps for good (refresh families expire with their tokens)", async () => {
  let writes: ReturnType<typeof recordKvWrites> | undefined;
  await using w = await storefrontWorld({ wrapKv: (kv) => (writes = recordKvWrites(kv)).kv });
  const { refreshTokenTtlS, assertionTtlS } = w.deps.config.storefront;
  // The seller, the signing key (made on first use) and the world's own records are the operator's:
  // only the flow is under test.
  await (await w.app.request(`${SF}/.well-known/jwks.json`)).body?.cancel();
  writes!.reset();

  const reg = await w.post("/oauth2/register", { redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" });
  assert.equal(reg.status, 201);
  const clientId = (await reg.json()).client_id as string;
  const verifier = "v".repeat(64);
  const url = new URL(`${SF}/oauth2/authorize`);
  for (
    const [k, v] of Object.entries({
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: await s256(verifier),
      code_challenge_method: "S256",
      state: "s1",
      resource: `${SF}/mcp`,
    })
  ) url.searchParams.set(k, v);
  const back = await consent(w, url.href, "anonymous");
  const code = back.searchParams.get("code");
  assert.ok(code, back.href);
  const granted = await w.form("/oauth2/token", {
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT,
    client_id: clientId,
    code_verifier: verifier,
    resource: `${SF}/mcp`,
  });
  assert.equal(granted.status, 200, await granted.clone().text());
  let refreshToken = (await granted.json()).refresh_token as string;
  for (let i = 0; i < 2; i++) {
    const refreshed = await w.form("/oauth2/token", {
      grant_type: "refresh_token",
      refresh_token: refreshToken,
      client_id: clientId,
    });
    assert.equal(refreshed.status, 200, await refreshed.clone().text());
    refreshToken = (await refreshed.json()).refresh_token;
  }

  assert.deepEqual(keptForGood(writes!.writes()), [], "records of the flow that KV keeps for good");
  // A family outlives its newest refresh token and the assertions minted with it, then goes.
  const families = writes!.writes().filter((x) => String(x.key[0]).endsWith("refresh_family"));
  assert.equal(families.length, 2);
  const longest = Math.max(refreshTokenTtlS, assertionTtlS) * 1000;
  for (const f of families) assert.ok(f.expireIn! > longest && f.expireIn! <= longest + DAY_MS, String(f.key[0]));
});

Deno.test("purchase: declined tokens, a declined card on a checkout and a cancelled checkout leave no payment record KV keeps for good; a paid one stays", async () => {
  let writes: ReturnType<typeof recordKvWrites> | undefined;
  await using w = await createCommerceWorld({ wrapKv: (kv) => (writes = recordKvWrites(kv)).kv });
  const { token } = await w.agents.issue();
  const purchase = `/plans/${w.plan.id}/purchase`;
  const challenge = async (body: Record<string, unknown>, rail: string) => {
    const res = await w.req(purchase, { ...postJson(body), token });
    assert.equal(res.status, 402);
    const found = challengesOf(res).find((c) => c.method === rail)!;
    return { challenge: found, json: await res.json() };
  };
  const present = (body: Record<string, unknown>, auth: string) =>
    w.req(purchase, { ...postJson(body, { authorization: auth, "zc-agent-authorization": `Bearer ${token}` }) });
  // The storefront's challenge key is made once, on first use: the operator's, not the flow's.
  await w.deps.commerce.service.challenges();
  writes!.reset();

  // The plain lane: any agent may answer a fresh 402 with a made-up token, as often as it likes.
  const body = { amountUsd: "5.000000" };
  for (const [rail, payToken] of [["card", SANDBOX_TOKENS.card.insufficientFunds], ["wallet", "wal_test_made_up"]]) {
    const { challenge: ch } = await challenge(body, rail!);
    const declined = await present(body, paymentAuthorization(ch, { token: payToken! }));
    assert.equal(declined.status, 402);
    assert.equal((await declined.json()).error, "settlement_failed");
  }
  // The checkout lane: a declined card leaves the checkout open; another is cancelled.
  const checkout = { amountUsd: "3.000000", checkout: true };
  const opened = await challenge(checkout, "card");
  const declined = await submitCheckoutForm(w, opened.json.card.checkout.url, {
    token: SANDBOX_TOKENS.card.insufficientFunds,
    action: "pay",
  });
  assert.equal(declined.status, 200);
  await declined.body?.cancel();
  const cancelled = await submitCheckoutForm(w, (await challenge(checkout, "card")).json.card.checkout.url, {
    action: "cancel",
  });
  assert.equal(cancelled.status, 200);
  await cancelled.body?.cancel();

  const payments = writes!.writes().filter((x) => x.key[0] === "commerce_payment");
  assert.equal(payments.length, 4);
  assert.deepEqual(keptForGood(writes!.writes()), [], "records of refused payments that KV keeps for good");
  // Kept a day past the last moment the reference could be presented (its challenge, or its checkout).
  for (const p of payments) assert.ok(p.expireIn! <= CHECKOUT_TTL_MS + DAY_MS, `${p.expireIn}`);

  // Money that moved is the operator's record: a paid reference (and the credit it bought) is kept for good.
  const { challenge: paid } = await challenge(body, "card");
  const ok = await present(body, paymentAuthorization(paid, { token: SANDBOX_TOKENS.card.success }));
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  assert.deepEqual(keptForGood(writes!.writes()), ["commerce_ent", "commerce_payment"]);
});

Deno.test("paid proxy: calls the upstream refuses (not billed) leave no debit KV keeps for good; a billed one stays", async () => {
  let writes: ReturnType<typeof recordKvWrites> | undefined;
  await using w = await createCommerceWorld({ upstream: true, wrapKv: (kv) => (writes = recordKvWrites(kv)).kv });
  const { token } = await w.agents.issue();
  // One cent of credit buys one billed query: enough to send refused calls without end.
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson({ amountUsd: "1.000000" }), token });
  const wallet = challengesOf(first).find((c) => c.method === "wallet")!;
  await first.body?.cancel();
  const bought = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson({ amountUsd: "1.000000" }, {
      authorization: paymentAuthorization(wallet, { token: SANDBOX_TOKENS.wallet.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal(bought.status, 200);
  await bought.body?.cancel();
  writes!.reset();
  const search = () => w.req(`/v2/search?data_model_id=${w.dataModelId}`, { ...postJson({ query: "rates" }), token });

  w.upstream.mode = "error";
  for (let i = 0; i < 5; i++) {
    const refused = await search();
    assert.equal(refused.status, 500);
    await refused.body?.cancel();
  }
  const debits = (kept: boolean) =>
    writes!.writes().filter((x) => x.key[0] === "commerce_debit" && (x.expireIn === undefined) === kept);
  assert.equal(debits(true).length, 0, "debits of unbilled calls kept for good");
  assert.equal(debits(false).length, 5);
  for (const d of debits(false)) assert.ok(d.expireIn! <= DAY_MS);
  // The credit itself is one record, whatever the number of calls.
  assert.equal(writes!.writes().filter((x) => x.key[0] === "commerce_ent").length, 1);

  w.upstream.mode = "ok";
  const billed = await search();
  assert.equal(billed.status, 200);
  await billed.body?.cancel();
  assert.equal(debits(true).length, 1, "a billed call's debit is the agent's record of what it paid");
});

Deno.test("standard methods: evm and x402 payments that did not settle leave no payment record KV keeps for good; each goes a day after its credential expires", async () => {
  // A facilitator that accepts every authorization and settles none (the payer had no funds).
  const facilitator = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.json().catch(() => null);
    const payer = body?.paymentPayload?.payload?.authorization?.from;
    if (new URL(req.url).pathname === "/verify") return Response.json({ isValid: true, payer });
    return Response.json({
      success: false,
      errorReason: "insufficient_funds",
      payer,
      transaction: "",
      network: `eip155:${LOCAL_CHAIN_ID}`,
    });
  });
  const token = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
  let writes: ReturnType<typeof recordKvWrites> | undefined;
  try {
    await using w = await createCommerceWorld({
      wrapKv: (kv) => (writes = recordKvWrites(kv)).kv,
      // mppx and x402 read the process clock for a credential's validity: the world's is anchored there.
      clock: new FixedClock(new Date().toISOString()),
      env: {
        PAY_EVM_CHAIN_ID: String(LOCAL_CHAIN_ID),
        PAY_EVM_TOKEN: token,
        PAY_EVM_TOKEN_NAME: TOKEN_DOMAIN.name,
        PAY_EVM_TOKEN_VERSION: TOKEN_DOMAIN.version,
        PAY_EVM_RECIPIENT: privateKeyToAccount(LOCAL_KEYS.seller).address,
        PAY_X402_FACILITATOR_URL: `http://127.0.0.1:${facilitator.addr.port}`,
      },
    });
    const { token: agent } = await w.agents.issue();
    const purchase = `http://store.test/plans/${w.plan.id}/purchase`;
    const app: typeof fetch = (input, init) => {
      const req = new Request(input, init);
      req.headers.set("host", "store.test");
      req.headers.set("zc-agent-authorization", `Bearer ${agent}`);
      return Promise.resolve(w.app.fetch(req));
    };
    await w.deps.commerce.service.challenges();
    writes!.reset();

    // mppx's client with its evm method, and @x402/fetch: each signs an authorization that never settles.
    const buyer = privateKeyToAccount(LOCAL_KEYS.buyer);
    const mppx = Mppx.create({
      methods: [evm({ account: buyer, authorization: TOKEN_DOMAIN })],
      fetch: app,
      polyfill: false,
    });
    const viaMppx = await mppx.fetch(purchase, postJson({ amountUsd: "1.000000" }));
    assert.equal(viaMppx.status, 402);
    assert.equal((await viaMppx.json()).error, "settlement_failed");
    const network = `eip155:${LOCAL_CHAIN_ID}` as const;
    const x402 = x402Client.fromConfig({
      schemes: [{ network, client: new ExactEvmScheme(buyer) }],
      spendControls: { allowedAssets: [{ network, asset: token }] },
    });
    const viaX402 = await wrapFetchWithPayment(app, x402)(purchase, postJson({ amountUsd: "2.000000" }));
    assert.equal(viaX402.status, 402);
    await viaX402.body?.cancel();

    const failed: PaymentRecord[] = [];
    for await (const e of w.deps.kv.list<PaymentRecord>({ prefix: ["commerce_payment", w.sellerId] })) {
      failed.push(e.value);
    }
    // Each client answers the refusal's fresh challenge once more, with another authorization.
    assert.ok(failed.length >= 2, `${failed.length}`);
    assert.ok(failed.every((p) => p.rail === "evm" && p.state === "failed"));
    const payments = writes!.writes().filter((x) => x.key[0] === "commerce_payment");
    assert.equal(payments.length, failed.length);
    assert.deepEqual(keptForGood(writes!.writes()), [], "records of unsettled payments that KV keeps for good");
    // A day past the credential's own end: mppx's challenge (5 minutes), x402's validBefore (300 s
    // ahead), read on a clock fixed when the test began (a minute of slack).
    for (const p of payments) assert.ok(p.expireIn! > DAY_MS && p.expireIn! <= DAY_MS + 6 * 60_000, `${p.expireIn}`);
  } finally {
    await facilitator.shutdown();
  }
});
