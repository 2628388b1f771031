/**
 * Commerce test world: the app over `:memory:` KV with a seller, its signing secret, a credit plan,
 * marketplace models, real agent tokens from the identity room, and optionally a real upstream HTTP
 * peer on 127.0.0.1
 * that verifies payproxy signatures and reports `zc-usage`.
 */
import assert from "node:assert/strict";
import { Challenge, Credential, Method, z } from "mppx";
import type { FixedClock } from "../../core/clock.ts";
import { SANDBOX_TOKENS } from "../../core/commerce/processor.ts";
import type { AuthenticatedAgent, CreditPlan, PaygPlan } from "../../core/commerce/types.ts";
import type { PayproxySecretStore } from "../../core/payproxy/secrets.ts";
import type { Deps, DepsOverrides } from "../../composition.ts";
import { newId } from "../../core/ids.ts";
import type { Credential as AgentCredential } from "../../core/identity/types.ts";
import { createTestWorld, type TestWorld } from "../_helpers.ts";

/**
 * Issues real agent credentials and access tokens through the identity room's services, so the
 * commerce routes run behind the real agent middleware.
 */
export class TestAgents {
  constructor(private readonly deps: Deps, private readonly sellerId: string) {}

  /**
   * An anonymous (unclaimed, expiring) credential by default; with `humanId`, a credential claimed
   * by that human. `renew()` exchanges again for a fresh access token (they live 5 minutes).
   */
  async issue(opts: { humanId?: string } = {}): Promise<{
    token: string;
    agent: AuthenticatedAgent;
    renew: () => Promise<string>;
  }> {
    const { storefront } = this.deps;
    if (opts.humanId) {
      const cred: AgentCredential = {
        credentialId: newId("ag", this.deps.clock),
        type: "identity_assertion",
        state: "claimed",
        accountId: opts.humanId,
        sellerId: this.sellerId,
        createdAt: this.deps.clock.now().toISOString(),
      };
      await this.deps.kv.set(["credential", cred.credentialId], cred);
      const renew = async () => (await storefront.tokens.mintAccessToken(cred)).accessToken;
      return {
        token: await renew(),
        agent: { credentialId: cred.credentialId, claimed: true, humanId: opts.humanId },
        renew,
      };
    }
    const seller = (await storefront.sellers.get(this.sellerId))!;
    const { identity } = await storefront.identity.anonymous(seller);
    const renew = async () => (await storefront.identity.exchange(identity.assertion)).accessToken;
    return {
      token: await renew(),
      agent: {
        credentialId: identity.credential.credentialId,
        claimed: false,
        expiresAt: identity.credential.expiresAt,
      },
      renew,
    };
  }
}

/** How the upstream peer answers. */
export type UpstreamMode = "ok" | "error" | "bad_usage" | "unpriced_usage" | "no_usage" | "broken_body";

export interface CommerceWorld extends TestWorld {
  agents: TestAgents;
  sellerId: string;
  tenantId: string;
  dataModelId: string;
  otherDataModelId: string;
  aiModelId: string;
  plan: CreditPlan;
  secrets: PayproxySecretStore;
  /** Host header value of the seller. */
  host: string;
  /** Upstream peer state (when started). */
  upstream: {
    mode: UpstreamMode;
    calls: number;
    verified: number;
    url: string;
    agentIds: (string | null)[];
    /** Awaited by each verified call before it answers (holds an answer while others race it). */
    hold?: () => Promise<void>;
  };
  /** Requests against the storefront with the seller's Host header. */
  req(path: string, init?: RequestInit & { token?: string }): Promise<Response>;
  addPayg(price: number, services?: string[]): Promise<PaygPlan>;
}

/** Builds the world. `upstream: true` starts the payproxy peer and points BASE_URL at it. */
export async function createCommerceWorld(
  { upstream = false, withSecret = true, withPlan = true, env: extraEnv = {}, clock: worldClock, wrapKv, overrides }: {
    upstream?: boolean;
    withSecret?: boolean;
    withPlan?: boolean;
    env?: Record<string, string>;
    /** The world's clock; a client that reads the process clock (mppx) needs one anchored there. */
    clock?: FixedClock;
    /** Stands in front of the world's KV (see `createTestWorld`). */
    wrapKv?: (kv: Deno.Kv) => Deno.Kv;
    /** Parts the builder should not make (e.g. a processor). */
    overrides?: DepsOverrides;
  } = {},
): Promise<CommerceWorld & AsyncDisposable> {
  const state: CommerceWorld["upstream"] = { mode: "ok", calls: 0, verified: 0, url: "", agentIds: [] };
  let server: Deno.HttpServer<Deno.NetAddr> | undefined;
  // The peer needs the world's secrets and clock, which exist only after the world: late-bound.
  const peer: { verify?: (req: Request, body: Uint8Array) => Promise<boolean> } = {};
  if (upstream) {
    server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      state.calls++;
      const body = new Uint8Array(await req.arrayBuffer());
      if (!(await peer.verify!(req, body))) {
        return Response.json({ error: "invalid_payproxy_signature" }, { status: 401 });
      }
      state.verified++;
      state.agentIds.push(req.headers.get("zc-agent-id"));
      await state.hold?.();
      const url = new URL(req.url);
      const slug = url.pathname.startsWith("/payproxy/v2/search") ? "demo-news" : "demo-answers";
      const usage = state.mode === "bad_usage"
        ? "not json"
        : state.mode === "unpriced_usage"
        ? JSON.stringify([{ serviceSlug: slug, meterSlug: "tokens", quantity: 1 }])
        : JSON.stringify([{ serviceSlug: slug, meterSlug: "query", quantity: 1 }]);
      if (state.mode === "error") return Response.json({ message: "upstream broke" }, { status: 500 });
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (state.mode !== "no_usage") headers["zc-usage"] = usage;
      if (state.mode === "broken_body") {
        // Usage reported, then the answer breaks off after its first bytes.
        const body = new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(new TextEncoder().encode('{"status":"ok","respo'));
          },
          pull(c) {
            c.error(new Error("upstream broke off"));
          },
        });
        return new Response(body, { status: 200, headers });
      }
      return new Response(JSON.stringify({ status: "ok", echo: JSON.parse(new TextDecoder().decode(body)) }), {
        status: 200,
        headers,
      });
    });
    state.url = `http://127.0.0.1:${server.addr.port}`;
  }
  const env: Record<string, string> = {
    AGENT_AUTH_URL: "http://store.test",
    NETWORK_API_URL: "http://store.test/network",
    // Claim e-mails land in the KV outbox, where tests read them as the human's mailbox.
    MAIL_OUTBOX: "true",
  };
  if (upstream) Object.assign(env, { BASE_URL: state.url, PAID_PROXY_UPSTREAM: "http" });
  Object.assign(env, extraEnv);
  const w = await createTestWorld({ env, clock: worldClock, wrapKv, overrides });
  const { deps, clock } = w;
  const now = clock.now().toISOString();
  const { tenantId } = await w.tenantWithKey("Seller Media");
  const dataModelId = newId("dm", clock);
  const otherDataModelId = newId("dm", clock);
  const aiModelId = newId("am", clock);
  await deps.repos.dataModels.create({
    id: dataModelId,
    tenantId,
    name: "Demo News",
    toolName: "demo-news",
    sites: [],
    marketplace: true,
    createdAt: now,
  });
  await deps.repos.dataModels.create({
    id: otherDataModelId,
    tenantId,
    name: "Archive Vault",
    sites: [],
    marketplace: true,
    createdAt: now,
  });
  await deps.repos.dataModels.create({
    id: newId("dm", clock),
    tenantId,
    name: "Private Drafts",
    sites: [],
    marketplace: false,
    createdAt: now,
  });
  await deps.repos.aiModels.create({
    id: aiModelId,
    tenantId,
    name: "Demo Answers",
    toolName: "demo-answers",
    groundingDataModelIds: [dataModelId],
    provider: { kind: "extractive" },
    output: { kind: "text" },
    private: false,
    marketplace: true,
    createdAt: now,
  });
  const sellerId = "acme";
  await deps.storefront.sellers.create({ sellerId, tenantId, name: "Acme Media", hosts: ["store.test"] });
  const agents = new TestAgents(deps, sellerId);
  const secrets = deps.payproxy.secrets;
  if (withSecret) await secrets.create(sellerId);
  // The payproxy verifier, without its single-use bookkeeping (the peer only checks who signed).
  peer.verify = async (req, body) => {
    try {
      const v = await deps.payproxy.verifier.check({
        signature: req.headers.get("zc-signature"),
        method: req.method,
        url: req.url,
        body,
        requestId: req.headers.get("zc-request-id"),
        agentId: req.headers.get("zc-agent-id"),
      });
      return v.sellerId === sellerId;
    } catch {
      return false;
    }
  };
  const catalog = deps.commerce.catalog;
  // Prices: 0.01 USD a search query, 0.02 USD an answer.
  await catalog.setPricing(sellerId, { defaultQueryPriceMicros: 10_000, servicePrices: { "demo-answers": 20_000 } });
  const plan = withPlan
    ? await catalog.addCreditPlan(sellerId, {
      name: "News credit",
      services: ["demo-news", "demo-answers"],
      minimumMicros: 100_000,
      maximumMicros: 100_000_000,
    })
    : (null as unknown as CreditPlan);
  const close = async () => {
    await w.close();
    if (server) await server.shutdown();
  };
  return {
    ...w,
    agents,
    sellerId,
    tenantId,
    dataModelId,
    otherDataModelId,
    aiModelId,
    plan,
    secrets,
    host: "store.test",
    upstream: state,
    req(path, init = {}) {
      const { token, ...rest } = init;
      const headers = new Headers(rest.headers);
      headers.set("host", "store.test");
      if (token && !headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
      // As a client sends it over HTTP (fetch, curl, the SDKs): a body of known size declares it. An
      // in-process Request has none, so each body would count as chunked, whose share of the body
      // budget is its whole limit.
      if (typeof rest.body === "string" && !headers.has("content-length")) {
        headers.set("content-length", String(new TextEncoder().encode(rest.body).byteLength));
      }
      return Promise.resolve(w.app.request(`http://store.test${path}`, { ...rest, headers }));
    },
    addPayg(price, services = ["*"]) {
      return catalog.addPaygPlan(sellerId, { name: "Pay as you go", services, pricePerRequestMicros: price });
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** JSON POST init. */
export const postJson = (body: unknown, extra: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...extra },
  body: JSON.stringify(body),
});

/** The `Payment` challenges of a 402, parsed with mppx. */
export function challengesOf(res: Response) {
  return Challenge.fromResponseList(res);
}

/** An `Authorization: Payment ...` value answering `challenge` with `payload`. */
export function paymentAuthorization(challenge: Challenge.Challenge, payload: Record<string, unknown>): string {
  return Credential.serialize(Credential.from({ challenge, payload }));
}

/** Buys `usd` of the world's credit plan for an agent token through the wallet rail. */
export async function buyWithWallet(w: CommerceWorld, token: string, usd: string) {
  const first = await w.req(`/plans/${w.plan.id}/purchase`, { ...postJson({ amountUsd: usd }), token });
  const ch = challengesOf(first).find((c) => c.method === "wallet")!;
  await first.body?.cancel();
  const res = await w.req(`/plans/${w.plan.id}/purchase`, {
    ...postJson({ amountUsd: usd }, {
      authorization: paymentAuthorization(ch, { token: SANDBOX_TOKENS.wallet.success }),
      "zc-agent-authorization": `Bearer ${token}`,
    }),
  });
  assert.equal(res.status, 200);
  await res.body?.cancel();
}

/** A wallet pay-per-call challenge answered for one agent, and the request that sends it. */
export async function payPerCall(w: CommerceWorld, token: string) {
  const first = await w.req(`/v2/search?data_model_id=${w.dataModelId}`, { ...postJson({ query: "rates" }), token });
  const [ch] = challengesOf(first);
  return {
    ch: ch!,
    send: () =>
      w.req(`/v2/search?data_model_id=${w.dataModelId}`, {
        ...postJson({ query: "rates" }, {
          authorization: paymentAuthorization(ch!, { token: SANDBOX_TOKENS.wallet.success }),
          "zc-agent-authorization": `Bearer ${token}`,
        }),
      }),
  };
}

/** An mppx client method for a rail that pays with a fixed token. */
export function tokenMethod(name: "card" | "wallet", token: string) {
  const method = Method.from({
    name,
    intent: "charge",
    schema: {
      credential: { payload: z.object({ token: z.string() }) },
      request: z.record(z.string(), z.unknown()),
    },
  });
  return Method.toClient(method, {
    createCredential: ({ challenge }) =>
      Promise.resolve(Credential.serialize(Credential.from({ challenge, payload: { token } }))),
  });
}

/** The app on a real port; every request reaches it as the seller's host (store.test). */
export function serveAsStore(w: CommerceWorld) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    const headers = new Headers(req.headers);
    headers.set("host", "store.test");
    return w.app.fetch(
      new Request(`http://store.test${url.pathname}${url.search}`, {
        method: req.method,
        headers,
        body: req.body,
        // deno-lint-ignore no-explicit-any
        duplex: "half" as any,
      } as RequestInit),
    );
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}
