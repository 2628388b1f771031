/**
 * The two ways into the MCP tools.
 * - A tenant API key: the tenant's own data models and AI models, through the same services as the
 *   bearer REST routes.
 * - A storefront agent access token: the seller's marketplace models, each call through the paid
 *   proxy (same entitlements, same price, same atomic once-per-request debit as
 *   `POST {agent_auth_url}/v2/search`). Without an entitlement the call fails with the MCP binding
 *   of the `Payment` scheme (JSON-RPC -32042, the storefront's challenges in `data.challenges`)
 *   before any search runs.
 */
import {
  type ConversationRequest,
  ConversationStore,
  followUpsFor,
  MAX_TURN_CHARS,
  standaloneQuery,
  turnFields,
} from "../../core/answer/mod.ts";
import {
  type ArticleText,
  articleWithText,
  SUMMARY_LICENCE_HIGHLIGHT_CHARACTERS,
  textOptionOf,
} from "../../core/search/mod.ts";
import type { Challenge, Credential, Receipt } from "mppx";
import { ASK_AI_FILTERS, ASK_AI_PARAMS, askAiRollup } from "../../analytics/rollups.ts";
import type { AnalyticsQuery, RollupDeps } from "../../analytics/rollups.ts";
import { cachedAnswerer } from "../analytics/answer.ts";
import {
  type Balance,
  CallPaymentRequired,
  challengeList,
  commerceErrors,
  formatUsd,
  loadMppx,
  type Mppx,
  planCovers,
  type UsageReceipt,
  UsageReceipts,
} from "../../core/commerce/mod.ts";
import type { AuthenticatedAgent, PaidProxy, PaygPlan, Plan, Seller, Service } from "../../core/commerce/mod.ts";
import type { Deps } from "../../composition.ts";
import { aiModelNotFound, AppError, dataModelNotFound } from "../../core/errors.ts";
import { describeError } from "../../core/log.ts";
import type { SearchRequest, SearchResponse } from "../../core/search/mod.ts";

/** A payment receipt as the MCP binding returns it: the `Payment-Receipt` fields and the challenge it paid. */
export type McpReceipt = Receipt.Receipt & { challengeId: string };

/**
 * The payment side of one tool call: the request's `_meta` (which may carry a `Payment` credential)
 * and, once a credential has paid for the call, the receipt to return in the result's `_meta`.
 */
export interface CallPayment {
  meta: Record<string, unknown>;
  receipt?: McpReceipt;
  /** The figures of a paid call (cost, balance, plan, request id), for the result's `_meta.usage`. */
  usage?: UsageReceipt;
}

/** A JSON-RPC error the MCP server answers as is (code, message, data). */
export class JsonRpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: Record<string, unknown>) {
    super(message);
  }
}

/** `search_articles` arguments after validation. */
export type SearchArgs = SearchRequest & { data_model_id: string };
/** `get_article` arguments after validation. */
export interface GetArticleArgs {
  data_model_id: string;
  url: string;
  max_characters?: number;
}
/** `ask` arguments after validation. */
export type AskArgs = { ai_model_id: string; query: string; related_questions?: boolean } & ConversationRequest;
/** An answer of the `ask` tool. */
export interface AskOutcome {
  message: string;
  /** A structured model's payload. */
  payload?: unknown;
  citations?: Record<string, unknown>[];
  related_questions?: string[];
  conversation_id?: string;
  explain?: unknown;
}
/** A model a caller may use. */
export interface ModelListing {
  id: string;
  name: string;
  /** Agents: the price of one call without credit (what the pay-per-call challenge asks). */
  price_usd?: string;
  /** Agents: what one call draws from plan credit. */
  credit_price_usd?: string;
  service_slug?: string;
  /** Data models: their most used categories, for the `categories` filter. */
  top_categories?: { category: string; count: number }[];
}

/** How many categories list_data_models shows per data model. */
const LISTED_CATEGORIES = 10;

/** What the tools call; one implementation per way in. */
export interface McpAccess {
  kind: "tenant" | "agent";
  /**
   * The most highlight characters per result a search with these arguments can give this caller
   * (its licence's cap), or null when it gets what it asks: the request's text budget draws no more.
   */
  highlightCap(args: SearchArgs): number | null;
  searchArticles(args: SearchArgs, payment: CallPayment): Promise<SearchResponse>;
  getArticle(args: GetArticleArgs, payment: CallPayment): Promise<ArticleText>;
  ask(args: AskArgs, payment: CallPayment): Promise<AskOutcome>;
  listDataModels(): Promise<ModelListing[]>;
  listAiModels(): Promise<ModelListing[]>;
  analyticsSummary(args: Record<string, string | undefined>): Promise<Record<string, unknown>>;
  /** Agents: credit left at this seller (free). */
  balance(): Promise<Balance>;
}

type TenantDeps = Pick<
  Deps,
  | "repos"
  | "search"
  | "answer"
  | "analytics"
  | "clock"
  | "analyticsCache"
  | "analyticsMemo"
  | "analyticsVisits"
  | "kv"
  | "log"
>;

/**
 * Caller identity of MCP calls made with a tenant API key (agent readership, tracking links): the
 * stateless transport carries no client identity, so the channel is all we know. Paid MCP calls go
 * through the paid proxy and carry `payproxy:<agent-id>`.
 */
export const MCP_CALLER = "mcp";

/** A tenant API key: everything scoped to the tenant, as on the REST routes. */
export class TenantAccess implements McpAccess {
  readonly kind = "tenant";
  constructor(
    private readonly deps: TenantDeps,
    private readonly tenantId: string,
    private readonly requestId: string,
    /** The caller's identity in analytics: a verified Web Bot Auth agent, else {@link MCP_CALLER}. */
    private readonly caller: string = MCP_CALLER,
    /** Aborted when the caller left (its request's signal, asked for before answering). */
    private readonly callerLeft?: AbortSignal,
  ) {}

  /** The tenant's own data models: it reads its articles whole, highlights as asked. */
  highlightCap(): null {
    return null;
  }

  async searchArticles(args: SearchArgs): Promise<SearchResponse> {
    const dm = await this.deps.repos.dataModels.getForTenant(this.tenantId, args.data_model_id);
    if (!dm) throw dataModelNotFound();
    const { data_model_id: _, ...request } = args;
    return await this.deps.search.recommend(dm, request, {
      tenantId: this.tenantId,
      caller: this.caller,
      requestId: this.requestId,
      ...(this.callerLeft ? { left: this.callerLeft } : {}),
    });
  }

  async getArticle(args: GetArticleArgs): Promise<ArticleText> {
    const dm = await this.deps.repos.dataModels.getForTenant(this.tenantId, args.data_model_id);
    if (!dm) throw dataModelNotFound();
    return await articleWithText(this.deps.search, dm, args.url, {
      clock: this.deps.clock,
      max: args.max_characters,
    });
  }

  async ask(args: AskArgs): Promise<AskOutcome> {
    const model = await this.deps.repos.aiModels.getForTenant(this.tenantId, args.ai_model_id);
    if (!model) throw aiModelNotFound();
    const conversations = new ConversationStore(this.deps.kv, this.deps.clock);
    const turn = await conversations.prepare(this.tenantId, model.id, args.query, args);
    const answer = await this.deps.answer.answer(model, turn.query, {
      tenantId: this.tenantId,
      caller: this.caller,
      requestId: this.requestId,
      ...(turn.query !== args.query ? { prompt: args.query } : {}),
      // Read by the engine only while it answers (a caller gone by then is shown no citations).
      ...(this.callerLeft ? { left: this.callerLeft } : {}),
    });
    // The answer is recorded and the caller's: a turn not kept (KV contention) is no failure of the
    // call, which the agent would ask again, and be answered and counted twice (as on /app/aimodel).
    // A caller gone before the answer never received it: its conversation stays as it was.
    if (!this.callerLeft?.aborted) {
      await conversations.remember(this.tenantId, model.id, turn, args.query, answer.message).catch((err) =>
        this.deps.log.warn("conversation turn not kept", { request_id: this.requestId, error: describeError(err) })
      );
    }
    // No follow-ups written (nor paid for) for a caller already gone.
    const related = args.related_questions && answer.kind === "text"
      ? {
        related_questions: await followUpsFor(
          this.deps.answer,
          (ids, q, o) => this.deps.search.retrieve(ids, q, o),
          model,
          turn.query,
          answer.citations,
          this.callerLeft,
        ),
      }
      : {};
    return {
      message: answer.message,
      ...(answer.kind === "structured" ? { payload: answer.payload } : {}),
      ...citationsOf(answer),
      ...related,
      ...turnFields(turn, args),
    };
  }

  async listDataModels(): Promise<ModelListing[]> {
    const models = await this.deps.repos.dataModels.listByTenant(this.tenantId);
    return await Promise.all(models.map(async (m) => ({
      id: m.id,
      name: m.name,
      top_categories: await this.deps.search.topCategories(m.id, LISTED_CATEGORIES),
    })));
  }

  async listAiModels(): Promise<ModelListing[]> {
    return (await this.deps.repos.aiModels.listByTenant(this.tenantId)).map((m) => ({ id: m.id, name: m.name }));
  }

  /** The `/v1/analytics/ask-ai` answer for these filters, from the same KV answer cache as REST. */
  async analyticsSummary(args: Record<string, string | undefined>): Promise<Record<string, unknown>> {
    const q: AnalyticsQuery = {};
    for (const [k, v] of Object.entries(args)) if (v !== undefined) q[k] = v;
    const rollupDeps: RollupDeps = {
      engine: this.deps.analytics,
      repos: this.deps.repos,
      clock: this.deps.clock,
      memo: this.deps.analyticsMemo,
      visits: this.deps.analyticsVisits,
    };
    const answer = cachedAnswerer(this.deps.analyticsCache, rollupDeps);
    const { body } = await answer(this.tenantId, {
      endpoint: "ask-ai",
      echo: ASK_AI_FILTERS,
      keyParams: ASK_AI_PARAMS,
      compute: (tenantId, query) => askAiRollup(rollupDeps, tenantId, query) as Promise<Record<string, unknown>>,
    }, q);
    return body;
  }

  balance(): Promise<Balance> {
    return Promise.reject(new AppError("forbidden", "agent_token_required", "balance needs a storefront agent token"));
  }
}

/** Citations, when the answer engine gives them. */
function citationsOf(answer: object): { citations?: Record<string, unknown>[] } {
  const c = (answer as { citations?: unknown }).citations;
  return Array.isArray(c) ? { citations: c as Record<string, unknown>[] } : {};
}

type AgentDeps = Pick<Deps, "commerce" | "log" | "search">;

/** A storefront agent: the seller's marketplace models, paid per call through the paid proxy. */
export class AgentAccess implements McpAccess {
  readonly kind = "agent";
  constructor(
    private readonly deps: AgentDeps,
    private readonly proxy: PaidProxy,
    private readonly seller: Seller,
    private readonly agent: AuthenticatedAgent,
  ) {
    this.receipts = new UsageReceipts(deps.commerce.service);
  }

  private readonly receipts: UsageReceipts;

  /**
   * A search that pays for no full text is forwarded with its highlights cut to the summary
   * licence's (the paid proxy's `passagesCapped`); one that pays for text gets them as asked.
   */
  highlightCap(args: SearchArgs): number | null {
    return textOptionOf(args) === null ? SUMMARY_LICENCE_HIGHLIGHT_CHARACTERS : null;
  }

  async searchArticles(args: SearchArgs, payment: CallPayment): Promise<SearchResponse> {
    const { data_model_id: dm, ...request } = args;
    const body = await this.paidCall("search", dm, `/payproxy/v2/search?data_model_id=${dm}`, request, payment);
    return body as unknown as SearchResponse;
  }

  getArticle(): Promise<ArticleText> {
    return Promise.reject(
      new AppError("not_found", "unknown_tool", "Unknown tool: tools/list names the tools you can call"),
    );
  }

  async ask(args: AskArgs, payment: CallPayment): Promise<AskOutcome> {
    const id = args.ai_model_id;
    if (args.conversation || args.conversation_id) {
      throw new AppError(
        "unprocessable",
        "invalid_request",
        "conversation: kept conversations need a tenant key; send messages",
      );
    }
    // The history travels with the call: the follow-up is made standalone before it is paid for.
    const query = standaloneQuery(args.query, args.messages ?? [], MAX_TURN_CHARS);
    const ask = { query, ...(args.related_questions ? { related_questions: true } : {}) };
    const answer = await this.paidCall("aimodel", id, `/payproxy/aimodel/${id}`, ask, payment);
    const explained = args.explain ? { explain: { query, history_turns: args.messages?.length ?? 0 } } : {};
    // Text models answer {message}; structured models their payload itself (spec 2.3).
    const textKeys = ["message", "citations", "related_questions"];
    const body = (answer && typeof answer === "object" ? answer : {}) as Record<string, unknown>;
    if (typeof body.message === "string" && Object.keys(body).every((k) => textKeys.includes(k))) {
      const related = Array.isArray(body.related_questions)
        ? { related_questions: body.related_questions.filter((q): q is string => typeof q === "string") }
        : {};
      return { message: body.message, ...citationsOf(body), ...related, ...explained };
    }
    return { message: JSON.stringify(answer), payload: answer, ...explained };
  }

  async listDataModels(): Promise<ModelListing[]> {
    const listed = await this.listings("search");
    return await Promise.all(listed.map(async (l) => ({
      ...l,
      top_categories: await this.deps.search.topCategories(l.id, LISTED_CATEGORIES),
    })));
  }

  listAiModels(): Promise<ModelListing[]> {
    return this.listings("aimodel");
  }

  /** The seller's services of a kind, priced as a call without credit is charged (the pay-per-call challenge). */
  private async listings(kind: Service["kind"]): Promise<ModelListing[]> {
    const [services, plans] = await Promise.all([
      this.services(),
      this.deps.commerce.service.sellingPlans(this.seller),
    ]);
    return services.filter((s) => s.kind === kind).map((s) => listing(s, plans));
  }

  analyticsSummary(): Promise<Record<string, unknown>> {
    return Promise.reject(new AppError("forbidden", "tenant_key_required", "analytics_summary needs a tenant API key"));
  }

  balance(): Promise<Balance> {
    return this.receipts.balance(this.seller, this.agent);
  }

  private services(): Promise<Service[]> {
    return this.deps.commerce.catalog.services(this.seller);
  }

  /**
   * One paid call through the paid proxy. A `Payment` credential in `_meta` (mppx's MCP binding)
   * answers a challenge: a purchase challenge buys credit first, a pay-per-call one pays this call.
   * The settled payment's receipt (the purchase's, or this call's) goes to `payment.receipt`.
   */
  private async paidCall(
    kind: Service["kind"],
    modelId: string,
    pathAndQuery: string,
    request: Record<string, unknown>,
    payment: CallPayment,
  ): Promise<unknown> {
    // The binding's constants (the -32042 code, the `_meta` keys) are mppx's: a paid call loads it.
    const mppx = await loadMppx();
    const headers = new Headers({ "content-type": "application/json" });
    const credential = credentialHeader(mppx, payment.meta[mppx.Mcp.credentialMetaKey]);
    if (credential) {
      // Own rails carry the terms in `request`; mppx's methods in `opaque` (meta).
      const action = termsOf(mppx, credential.value).action;
      if (action === "purchase" || action === "extend") {
        let receipt: string | null;
        try {
          receipt = await this.buy(mppx, credential, action);
        } catch (err) {
          throw namedPaymentError(err);
        }
        payment.receipt = mcpReceipt(mppx, receipt, credential.value.challenge.id);
      } else headers.set("authorization", credential.header);
    }
    let res: Response;
    try {
      res = await this.proxy.call({
        seller: this.seller,
        agent: this.agent,
        kind,
        modelId,
        pathAndQuery,
        publicPath: pathAndQuery.replace(/^\/payproxy/, ""),
        body: new TextEncoder().encode(JSON.stringify(request)),
        headers,
      });
    } catch (err) {
      // A pay-per-call charge refunded because the upstream did not answer: its receipt says so.
      const receipt = err instanceof AppError ? err.headers?.["payment-receipt"] : undefined;
      if (credential && !payment.receipt && receipt) {
        payment.receipt = mcpReceipt(mppx, receipt, credential.value.challenge.id);
      }
      throw await this.paymentError(mppx, err, kind, modelId);
    }
    const text = await res.text();
    let answer: { value: unknown } | null = null;
    try {
      answer = { value: JSON.parse(text) };
    } catch { /* empty or non-JSON error body */ }
    const body = answer?.value as Record<string, unknown> | null | undefined;
    // This call's receipt, also when the upstream erred (the charge was refunded; the receipt says so).
    if (credential && !payment.receipt) {
      payment.receipt = mcpReceipt(mppx, res.headers.get("payment-receipt"), credential.value.challenge.id);
    }
    // Any JSON answer was billed, so it is answered: a structured model's payload may be a string,
    // a number or null (a schema whose root is not an object).
    if (res.ok && answer) {
      payment.usage = await this.receipts.forResponse(this.seller, this.agent, res) ?? undefined;
      return answer.value;
    }
    if (res.status === 404) {
      throw kind === "search" ? dataModelNotFound() : aiModelNotFound();
    }
    if (res.status === 422 && typeof body?.message === "string") {
      throw new AppError("unprocessable", "invalid_request", body.message);
    }
    this.deps.log.warn("paid MCP call failed upstream", { status: res.status, model: modelId });
    throw new AppError("upstream_failed", "upstream_failed", "The service could not answer this call");
  }

  /**
   * Settles a purchase or top-up credential, so the call that carried it can use the credit.
   * @returns the purchase's `Payment-Receipt` header, if it sent one
   */
  private async buy(
    mppx: Mppx,
    credential: { header: string; value: Credential.Credential },
    action: "purchase" | "extend",
  ): Promise<string | null> {
    const request = termsOf(mppx, credential.value);
    const res = await this.deps.commerce.service.purchase({
      seller: this.seller,
      agent: this.agent,
      action,
      planId: typeof request.planId === "string" ? request.planId : undefined,
      body: { amountUsd: request.amountUsd, ...(action === "extend" ? { planId: request.planId } : {}) },
      headers: new Headers({ authorization: credential.header }),
    });
    // A credential that answers no purchase here gets the purchase's own challenge: its code is the
    // 402's (spec 7.3), never a made-up "unfinished".
    if (res.kind === "challenge") throw commerceErrors.purchase_not_made();
    return res.receipts.find(([k]) => k.toLowerCase() === "payment-receipt")?.[1] ?? null;
  }

  /**
   * The paid proxy's refusals as MCP errors: pay-per-call challenges and missing or spent credit
   * become -32042 with the storefront's challenges (the values core hands over, the same challenges
   * REST lists in `WWW-Authenticate`); everything else stays an AppError.
   */
  private async paymentError(mppx: Mppx, err: unknown, kind: Service["kind"], modelId: string): Promise<unknown> {
    if (!(err instanceof AppError)) return err;
    if (PAYMENT_REFUSALS.test(err.code)) return namedPaymentError(err);
    if (err instanceof CallPaymentRequired && err.challenges.length) {
      return paymentRequired(mppx, err.challenges, err.message, err.extra);
    }
    if (err.code === "plan_required" || err.code === "usage_exhausted") {
      const challenges = await this.purchaseChallenges(kind, modelId);
      if (challenges.length) {
        return paymentRequired(mppx, challenges.map((c) => c.challenge), err.message, {
          purchase: challenges[0]!.purchase,
          ...(err.extra ?? {}),
        });
      }
    }
    return err;
  }

  /** The challenges the storefront's purchase 402 carries for the cheapest credit plan covering the model. */
  private async purchaseChallenges(kind: Service["kind"], modelId: string) {
    const { commerce } = this.deps;
    const service = (await this.services()).find((s) => s.kind === kind && s.modelId === modelId);
    if (!service) return [];
    const plans = (await commerce.service.sellingPlans(this.seller)).filter((p) =>
      p.kind === "credit" && planCovers(p, service.slug)
    );
    const plan =
      plans.sort((a, b) =>
        (a.kind === "credit" ? a.minimumMicros : 0) - (b.kind === "credit" ? b.minimumMicros : 0)
      )[0];
    if (!plan || plan.kind !== "credit") return [];
    const offer = await commerce.service.purchaseChallenge(this.seller, this.agent, plan, plan.minimumMicros);
    const purchase = {
      planId: plan.id,
      amountUsd: offer.terms.amountUsd,
      pricePerCallUsd: formatUsd(service.meters.query),
    };
    return challengeList(offer).map((challenge) => ({ challenge, purchase }));
  }
}

/**
 * A model as agents see it. `price_usd` is what one call costs without credit: the price the
 * pay-per-call challenge asks (the covering pay-as-you-go plan's), else the metered price;
 * `credit_price_usd` is what a call draws from plan credit.
 */
function listing(s: Service, plans: Plan[]): ModelListing {
  const payg = plans.find((p): p is PaygPlan => p.kind === "payg" && planCovers(p, s.slug));
  return {
    id: s.modelId,
    name: s.name,
    price_usd: formatUsd(payg ? payg.pricePerRequestMicros : s.meters.query),
    credit_price_usd: formatUsd(s.meters.query),
    service_slug: s.slug,
  };
}

/** Storefront codes of a credential that was presented and refused (spec 7.3): the agent must read which. */
const PAYMENT_REFUSALS = /^(payment_(?!required$)[a-z_]+|settlement_failed)$/;

/**
 * A refused `Payment` credential as a tool error that names its spec 7.3 code
 * (`payment_consumed: Payment already settled; ...`): a tool error carries only text, and
 * "spent", "unfinished" and "failed" call for different next steps.
 */
function namedPaymentError(err: unknown): unknown {
  if (!(err instanceof AppError) || !PAYMENT_REFUSALS.test(err.code)) return err;
  return new AppError(err.kind, err.code, `${err.code}: ${err.message}`, {
    detail: err.detail,
    extra: err.extra,
    headers: err.headers,
  });
}

/** The storefront's terms a challenge carries: in `request` (own rails) or `opaque` (mppx's methods). */
function termsOf(mppx: Mppx, credential: Credential.Credential): Record<string, unknown> {
  const c = credential.challenge as Challenge.Challenge & { meta?: Record<string, string>; opaque?: string };
  let meta: Record<string, unknown> | undefined = c.meta;
  if (!meta && typeof c.opaque === "string") {
    try {
      meta = mppx.PaymentRequest.deserialize(c.opaque) as Record<string, unknown>;
    } catch { /* not ours: the terms check refuses it */ }
  }
  return typeof meta?.action === "string" ? meta : (c.request as Record<string, unknown>);
}

/** A `Payment-Receipt` header value as the MCP binding's receipt; undefined when there is none. */
function mcpReceipt(mppx: Mppx, header: string | null, challengeId: string): McpReceipt | undefined {
  return header ? { ...mppx.Receipt.deserialize(header), challengeId } : undefined;
}

/** A `Payment` credential from `_meta`, as header and value; null when absent. */
function credentialHeader(mppx: Mppx, value: unknown): { header: string; value: Credential.Credential } | null {
  if (value === undefined || value === null) return null;
  try {
    if (typeof value !== "object" || !("challenge" in value) || !("payload" in value)) throw new Error("shape");
    const header = mppx.Credential.serialize(value as Credential.Credential);
    return { header, value: mppx.Credential.deserialize(header) };
  } catch {
    throw new AppError("bad_request", "invalid_request", "Malformed Payment credential in _meta");
  }
}

/** The -32042 error: the challenges, and a problem detail a model can act on. */
function paymentRequired(
  mppx: Mppx,
  challenges: Challenge.Challenge[],
  message: string,
  extra?: Record<string, unknown>,
): JsonRpcError {
  const { Errors, Mcp } = mppx;
  return new JsonRpcError(Mcp.paymentRequiredCode, "Payment required", {
    httpStatus: 402,
    challenges,
    problem: {
      ...new Errors.PaymentRequiredError({ description: message }).toProblemDetails(),
      hint: `Answer one challenge with a Payment credential in _meta["${Mcp.credentialMetaKey}"] and call again`,
    },
    ...(extra ?? {}),
  });
}
