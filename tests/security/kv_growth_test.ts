/**
 * Nothing an outsider can make the service write for free is kept in KV for good. A `:memory:` KV
 * shows no expiry, so these tests read the lifetime each write asked for (`tests/_kv_writes.ts`):
 * every key a flow writes must be one KV drops in time, or be named here with why it stays.
 */
import assert from "node:assert/strict";
import { CHECKOUT_TTL_MS } from "../../core/commerce/checkout.ts";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import { challengesOf, createCommerceWorld, paymentAuthorization, postJson } from "../commerce/_helpers.ts";
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
