/**
 * `POST /mcp`: the Model Context Protocol over Streamable HTTP, stateless (no protocol session:
 * each POST is served by a fresh server and transport, JSON responses), built on the official SDK.
 * `GET /.well-known/mcp.json` is its server card.
 *
 * Authentication happens before MCP: `Authorization: Bearer ak_...` (a tenant API key) or
 * `Bearer <storefront agent access token>`. Anything else is a 401 with a `WWW-Authenticate`
 * challenge pointing at the protected-resource metadata, before any JSON-RPC is read.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { CallToolRequest } from "@modelcontextprotocol/sdk/types.js";
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { type AuthenticatedAgent, loadMppx } from "../../core/commerce/mod.ts";
import type { Deps } from "../../composition.ts";
import { AppError } from "../../core/errors.ts";
import { describeError } from "../../core/log.ts";
import { lazily } from "../../core/lazily.ts";
import type { AppEnv } from "../env.ts";
import { familyApp } from "../family.ts";
import { documented } from "../openapi.ts";
import { sellerOf } from "../storefront/seller.ts";
import { mcpChallenge, mcpResourceMetadataUrl } from "../storefront/discovery.ts";
import { agentCors } from "../middleware/cors.ts";
import { botCaller, WebBotAuth } from "../../core/web_bot_auth/mod.ts";
import { mcpResource } from "../../core/identity/mod.ts";
import { API_VERSION } from "../version.ts";
import {
  AgentAccess,
  type CallPayment,
  type GetArticleArgs,
  JsonRpcError,
  type McpAccess,
  type SearchArgs,
  TenantAccess,
} from "./access.ts";
import { renderAnswer, renderArticle, renderBalance, renderModels, renderSearch, toolResult } from "./render.ts";
import { parseArguments, toolListings, toolNamed } from "./tools.ts";
import { SearchBudget } from "./text_budget.ts";
import { publicJsonRpcMessage, unsupportedProtocolVersion } from "./jsonrpc_errors.ts";
import { readMcpBody, repeatedIdResponse, repeatsRequestId, requestCount } from "./batch.ts";
import { takeBodyShare } from "../middleware/body.ts";
import { limitAddress } from "../middleware/public_limits.ts";
import { actFor, callerIs } from "../request_scope.ts";

/** The MCP server's name in `initialize` and the server card. */
export const MCP_SERVER_NAME = "article-search";

const BEARER_RE = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** Runs one tool with validated arguments; searches draw on the budget of their POST. */
async function runTool(access: McpAccess, name: string, args: unknown, payment: CallPayment, budget: SearchBudget) {
  const tool = toolNamed(name);
  if (!tool || (access.kind === "agent" ? !tool.forAgents : tool.forTenants === false)) {
    throw new AppError("not_found", "unknown_tool", "Unknown tool: tools/list names the tools you can call");
  }
  switch (tool.name) {
    case "search_articles": {
      // A POST's answer is one JSON-RPC message: its results and article text are bounded (text_budget.ts).
      const searchArgs = parseArguments<SearchArgs>(tool, args);
      // Drawn at what the caller can receive: highlights past its licence's cap never reach it.
      const { out, notice } = await budget.run(
        searchArgs,
        access.kind === "tenant",
        (budgeted) => access.searchArticles(budgeted, payment),
        access.highlightCap(searchArgs),
      );
      const rendered = renderSearch(out);
      return notice
        ? toolResult({ ...out, notice }, `${rendered}\n\n${notice}`)
        : toolResult(out as unknown as Record<string, unknown>, rendered);
    }
    case "get_article": {
      // Its text draws on the same budget as the searches of its POST.
      const { out, notice } = await budget.article(
        parseArguments<GetArticleArgs>(tool, args),
        (budgeted) => access.getArticle(budgeted, payment),
      );
      return notice
        ? toolResult({ ...out, notice }, `${renderArticle(out)}\n\n${notice}`)
        : toolResult({ ...out }, renderArticle(out));
    }
    case "ask": {
      const answer = await access.ask(parseArguments(tool, args), payment);
      return toolResult({ ...answer }, renderAnswer(answer.message, answer.citations as never));
    }
    case "list_data_models": {
      parseArguments(tool, args);
      const models = await access.listDataModels();
      return toolResult({ data_models: models }, renderModels("data models", models));
    }
    case "list_ai_models": {
      parseArguments(tool, args);
      const models = await access.listAiModels();
      return toolResult({ ai_models: models }, renderModels("AI models", models));
    }
    case "analytics_summary": {
      const out = await access.analyticsSummary(parseArguments(tool, args));
      return toolResult(out, JSON.stringify((out as { summary?: unknown }).summary ?? out, null, 2));
    }
    case "balance": {
      parseArguments(tool, args);
      const out = await access.balance();
      return toolResult(out as unknown as Record<string, unknown>, renderBalance(out));
    }
  }
}

/**
 * The SDK's server, transport and request schemas, imported on the first MCP request (or server card):
 * they take about 150 ms to load, which no other route (and no test that does not speak MCP) should pay.
 */
const mcpSdk = lazily(async () => ({
  ...await import("@modelcontextprotocol/sdk/server/index.js"),
  ...await import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
  ...await import("@modelcontextprotocol/sdk/types.js"),
  // One for the process: left out, each request's server builds its own Ajv instance (about 0.2 ms
  // of CPU, a quarter of a tools/list) only to check answers to elicitation, which this server never asks for.
  jsonSchemaValidator: new (await import("@modelcontextprotocol/sdk/validation/ajv")).AjvJsonSchemaValidator(),
}));

/**
 * A fresh low-level MCP server for one request, bound to the caller's access. Every tool call is
 * one hit on the analytics limiter under `limitKey` (the REST bucket of the same API key), so a
 * JSON-RPC batch of 100 calls is 100 hits; over the limit a call answers a tool error.
 */
async function mcpServer(
  access: McpAccess,
  deps: Pick<Deps, "log" | "analyticsLimiter">,
  requestId: string,
  limitKey: string,
): Promise<Server> {
  const { Server, CallToolRequestSchema, ListToolsRequestSchema, CancelledNotificationSchema, jsonSchemaValidator } =
    await mcpSdk();
  const server = new Server(
    { name: MCP_SERVER_NAME, version: API_VERSION },
    {
      jsonSchemaValidator,
      capabilities: { tools: { listChanged: false } },
      instructions: "News article search and real-time answers. Call list_data_models or list_ai_models first, " +
        "then search_articles or ask with an id from them.",
    },
  );
  // Stateless: a cancellation can only name a request of its own POST, whose answer the JSON response
  // waits for. The SDK sends nothing for a cancelled request, so the response (and this server) would
  // wait forever: every request of a POST is answered, cancellations are ignored.
  server.setNotificationHandler(CancelledNotificationSchema, () => {});
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: toolListings(access.kind === "agent") }) as never);
  const budget = new SearchBudget();
  server.setRequestHandler(CallToolRequestSchema, async (request: CallToolRequest) => {
    const { name, arguments: args, _meta } = request.params;
    const payment: CallPayment = { meta: (_meta ?? {}) as Record<string, unknown> };
    const limited = await deps.analyticsLimiter.hit(limitKey);
    if (!limited.allowed) {
      return {
        content: [{ type: "text", text: `Rate limit exceeded: try again in ${limited.retryAfterS} s` }],
        isError: true,
      } as never;
    }
    try {
      return await withReceipt(await runTool(access, name, args, payment, budget), payment);
    } catch (err) {
      if (err instanceof JsonRpcError) throw err;
      // Bad arguments, refusals and outages are tool errors the model can read and act on; only our
      // own words go out, never a library's message.
      if (!(err instanceof AppError) || err.serverSide) {
        deps.log.error("MCP tool failed", { request_id: requestId, tool: name, error: describeError(err) });
      }
      const message = err instanceof AppError ? err.message : "Internal error";
      // A purchase settled before the call failed still hands over its receipt.
      return await withReceipt({ content: [{ type: "text", text: message }], isError: true }, payment) as never;
    }
  });
  return server;
}

/**
 * The result with the receipt of the payment that paid for it in `_meta` (mppx's MCP binding) and
 * the call's figures in `_meta.usage` (the REST answers' `usage` block).
 */
async function withReceipt<T extends Record<string, unknown>>(result: T, payment: CallPayment): Promise<T> {
  // A receipt means a paid call, which has loaded mppx already (its binding names the key).
  const receiptKey = payment.receipt ? (await loadMppx()).Mcp.receiptMetaKey : "";
  const meta = {
    ...(payment.receipt ? { [receiptKey]: payment.receipt } : {}),
    ...(payment.usage ? { usage: payment.usage } : {}),
  };
  return Object.keys(meta).length ? { ...result, _meta: meta } : result;
}

/** The MCP sub-app, mounted at `/mcp`. */
export function createMcpRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const app = familyApp("oauth", deps.log);
  app.use("*", agentCors());
  const proxy = deps.commerce.proxy;
  // Storefront access tokens (jwt-bearer) and tokens an OAuth client got for this endpoint (RFC 8707).
  const audiences = [deps.config.agentAuthUrl, mcpResource(deps.config)];
  const unauthorized = (code: string, message: string) =>
    new AppError("unauthenticated", code, message, {
      headers: { "www-authenticate": mcpChallenge(deps.config, code === "invalid_token" ? code : undefined) },
    });

  /**
   * The caller's access from its bearer credential, and its rate-limit key: tool calls share the
   * REST analytics bucket of the same API key; agents get one per credential.
   */
  async function authenticate(c: Context<AppEnv>): Promise<{ access: McpAccess; limitKey: string }> {
    const header = c.req.header("authorization");
    if (header === undefined) {
      throw unauthorized("invalid_request", "Send Authorization: Bearer <API key or agent access token>");
    }
    const token = BEARER_RE.exec(header.trim())?.[1];
    if (!token) throw unauthorized("invalid_request", 'Authorization must be exactly one "Bearer <token>"');
    const requestId = c.env.requestId;
    if (token.startsWith("ak_")) {
      let record;
      try {
        record = await deps.apiKeys.authenticate(`Bearer ${token}`);
      } catch (err) {
        if (err instanceof AppError) throw unauthorized("invalid_token", "Unknown or revoked API key");
        throw err;
      }
      actFor(c, record.tenantId);
      c.set("apiKey", record);
      // A Web Bot Auth agent is named in readership; verified only once the key is known good.
      const bot = WebBotAuth.present(c.req.raw.headers)
        ? botCaller(await deps.webBotAuth.identify(c.req.raw))
        : undefined;
      // The request's signal, asked for before any answer is made (Deno makes it on first use, and
      // one made after its client left may never abort): a turn its caller left is not kept.
      const caller = c.req.raw.signal;
      return { access: new TenantAccess(deps, record.tenantId, requestId, bot, caller), limitKey: record.id };
    }
    let principal;
    try {
      principal = await deps.storefront.tokens.verifyAccessToken(token, audiences);
    } catch (err) {
      if (err instanceof AppError) throw unauthorized("invalid_token", "The access token did not verify");
      throw err;
    }
    const seller = await sellerOf(c, deps);
    const record = principal.claimed ? null : await deps.storefront.accounts.credential(principal.credentialId);
    const agent: AuthenticatedAgent = {
      credentialId: principal.credentialId,
      claimed: principal.claimed,
      ...(principal.accountId ? { humanId: principal.accountId } : {}),
      ...(record?.expiresAt ? { expiresAt: record.expiresAt } : {}),
    };
    await deps.commerce.service.agents.note(agent);
    const caller = `agent:${agent.credentialId}`;
    callerIs(c, caller);
    return { access: new AgentAccess(deps, proxy, seller, agent), limitKey: caller };
  }

  documented(app, mcpPostDoc, async (c) => {
    const { access, limitKey } = await authenticate(c);
    // The body and what is decoded from it are held until the answer: its share of the process's
    // body budget too (routes/middleware/body_budget.ts), an agent's (its token is free to mint)
    // counted against its address.
    const giveBack = await takeBodyShare(c.req.raw, deps.config.maxBodyBytes, {
      holder: access.kind === "agent" ? limitAddress(c, deps.config.trustProxy) : undefined,
    });
    try {
      return await servePost(c, access, limitKey);
    } finally {
      giveBack();
    }
  });

  async function servePost(c: Context<AppEnv>, access: McpAccess, limitKey: string): Promise<Response> {
    // Read ahead: the batch's size is what the request costs, and a batch repeating an id is refused.
    const body = await readMcpBody(c.req.raw, deps.config.maxBodyBytes);
    // An agent's token is free to mint (an anonymous identity), and every request builds a server, tool
    // call or not: an agent's requests count on the budget of its paid REST calls (routes/storefront/paid_proxy.ts),
    // a batch by its number of requests (100 tools/list in one POST answer ~1 MB).
    if (access.kind === "agent") {
      const hit = await deps.searchLimiter.hit(limitKey, requestCount(body));
      if (!hit.allowed) {
        throw new AppError("rate_limited", "rate_limit_exceeded", "Too many requests: retry later", {
          extra: { retry_after: hit.retryAfterS },
          headers: { "retry-after": String(hit.retryAfterS) },
        });
      }
    }
    if (repeatsRequestId(body)) return repeatedIdResponse();
    const { WebStandardStreamableHTTPServerTransport, SUPPORTED_PROTOCOL_VERSIONS } = await mcpSdk();
    const version = c.req.header("mcp-protocol-version") ?? null;
    const unsupported = unsupportedProtocolVersion(version, body, SUPPORTED_PROTOCOL_VERSIONS);
    if (unsupported) return unsupported;
    const server = await mcpServer(access, deps, c.env.requestId, limitKey);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize: deps.config.maxBodyBytes,
    });
    // Every JSON-RPC error the SDK sends goes out in our words (routes/mcp/jsonrpc_errors.ts).
    const send = transport.send.bind(transport);
    transport.send = (message: Parameters<typeof send>[0], options?: Parameters<typeof send>[1]) =>
      send(
        publicJsonRpcMessage(message, (detail) =>
          deps.log.error("MCP request failed", { request_id: c.env.requestId, error: detail })),
        options,
      );
    await server.connect(transport);
    try {
      return await transport.handleRequest(c.req.raw, body === undefined ? undefined : { parsedBody: body });
    } finally {
      await server.close();
    }
  }
  // Stateless: no server-initiated stream to open and no session to end.
  const notAllowed = () =>
    Response.json(
      {
        jsonrpc: "2.0",
        error: { code: -32000, message: "Method not allowed: this server is stateless, POST only" },
        id: null,
      },
      { status: 405, headers: { allow: "POST" } },
    );
  // A constant 405 before any credential is read: never limited (the 429 is POST's).
  const { 429: _limited, ...responses } = mcpPostDoc.responses;
  const notServed = (method: "get" | "delete", summary: string) =>
    documented(app, { ...mcpPostDoc, method, summary, responses }, notAllowed);
  notServed("get", "Not served: stateless, POST only (405)");
  notServed("delete", "Not served: no session to end (405)");
  return app;
}

/** `GET /.well-known/mcp.json`: the server card (name, endpoint, transport, auth, tools). */
export function createMcpCardRoutes(deps: Pick<Deps, "config" | "log">): OpenAPIHono<AppEnv> {
  const app = familyApp("message", deps.log);
  app.use("*", agentCors());
  documented(app, cardDoc, async (c) => {
    // The protocol versions the SDK's server negotiates (its SUPPORTED_PROTOCOL_VERSIONS), newest first.
    const { SUPPORTED_PROTOCOL_VERSIONS } = await mcpSdk();
    c.header("cache-control", "public, max-age=300");
    return c.json({
      name: MCP_SERVER_NAME,
      title: "Article search and real-time answers",
      version: API_VERSION,
      description: "Search news articles (domain and date filters, explanations), ask AI models grounded in " +
        "fresh articles, list models, and read Ask AI analytics. Tenants use their API key; agents use a " +
        "storefront access token and pay per call.",
      endpoint: `${deps.config.baseUrl}/mcp`,
      transport: { type: "streamable-http", stateless: true },
      protocolVersions: SUPPORTED_PROTOCOL_VERSIONS,
      authentication: {
        schemes: ["bearer"],
        apiKey: "Authorization: Bearer ak_... (tenant scope)",
        agentToken: `Authorization: Bearer <access token from ${deps.config.agentAuthUrl}/oauth2/token>`,
        protectedResourceMetadata: `${deps.config.agentAuthUrl}/.well-known/oauth-protected-resource`,
        mcpResourceMetadata: mcpResourceMetadataUrl(deps.config),
        authorizationServer: deps.config.networkApiUrl,
        oauth: "authorization code + PKCE (S256); dynamic client registration or a client ID metadata document; " +
          "see docs/agents.md",
      },
      payment: {
        scheme: "Payment",
        binding: "JSON-RPC error -32042 with data.challenges; credential in params._meta['org.paymentauth/credential']",
        prices: `${deps.config.agentAuthUrl}/services`,
      },
      tools: toolListings(false).map((t) => ({ name: t.name, title: t.title, description: t.description })),
    });
  });
  return app;
}

const mcpPostDoc = createRoute({
  method: "post",
  path: "/",
  tags: ["mcp"],
  summary: "Model Context Protocol over Streamable HTTP (stateless): tools search_articles, ask, list_data_models, " +
    "list_ai_models, analytics_summary (tenants), balance (agents)",
  description: "JSON-RPC 2.0 messages in, JSON out. `Authorization: Bearer ak_...` (tenant) or a storefront agent " +
    "access token (jwt-bearer, or OAuth 2.1 authorization code with `resource` = this endpoint; paid per call; " +
    "-32042 with `data.challenges` without an entitlement; paid results carry `_meta.usage`). CORS for any origin, " +
    "no credentials. See docs/agents.md.",
  security: [{ bearerAuth: [] }, { agentToken: [] }],
  request: {
    body: { required: true, content: { "application/json": { schema: z.record(z.string(), z.unknown()) } } },
  },
  responses: {
    200: {
      description: "JSON-RPC response(s)",
      content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
    },
    401: {
      description: "Missing, malformed or unknown credential (`WWW-Authenticate: Bearer resource_metadata=" +
        '"{base_url}/.well-known/oauth-protected-resource/mcp"`)',
    },
    405: { description: "GET and DELETE: this server keeps no sessions" },
    429: {
      description: "`rate_limit_exceeded`: too many requests for this agent credential this minute " +
        "(`SEARCH_RATE_LIMIT_PER_MIN`, shared with its paid REST calls); `Retry-After` says when to try again. " +
        "Tool calls also count per caller and answer a tool error over their own limit",
    },
  },
});

const cardDoc = createRoute({
  method: "get",
  path: "/mcp.json",
  tags: ["mcp"],
  summary: "MCP server card: endpoint, transport, authentication, payment binding and tools",
  responses: {
    200: {
      description: "The server card",
      content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
    },
  },
});
