/**
 * Request and response examples for the OpenAPI document, one or more per route family, in the
 * shapes the embedded demo answers (tests/foundation/openapi_examples_test.ts compares their keys
 * with live answers, so they cannot drift). Kept here, apart from the route definitions, and merged
 * into the generated document by {@link withExamples}.
 */

/** Examples of one operation: its JSON request body and its answers by status. */
export interface OperationExamples {
  request?: unknown;
  responses: Record<string, unknown>;
}

const DM = "dm_01m81j18g06eqj8nhqr2e5bt3d";
const AM = "am_01m81j18g0mcwb21837505g16m";
const WD = "wd_01m81j18g0j9e5nh47rbcfx6by";
const TN = "tn_01m81j18g0seeh1hastysggcwd";
const CP = "cp_01m81j18g0m3vag949yxg6v8yr";
const BASE = "http://127.0.0.1:8000";
const ARTICLE_URL =
  "https://dailyledger.example/environment/2026/11/flooding-closes-roads-as-coastal-storm-batters-the-shoreline-55";
const TRACKING =
  `${BASE}/r/k2wzTuQ.eyJkIjoiZG1fMDFtODFqMThnMDZlcWo4bmhxcjJlNWJ0M2QiLCJhIjoiYXJfMDFtODFqMThnMGthMndk.X7A8608yCBYi21yZlvnVZA`;
const IMAGE =
  `${BASE}/img?src=k2wzTuQ.eyJzIjoiaHR0cHM6Ly9kYWlseWxlZGdlci5leGFtcGxlL2ltYWdlcy9mbG9vZGluZy5qcGcifQ.eOYiyGdmwh4ypmq3tVpFzw`;

const searchResponse = {
  status: "success",
  response: {
    query: "coastal storm flooding",
    results: [{
      author: "Jordan Okafor",
      image_url: IMAGE,
      preview_content: "Volunteers filled sandbags at the community centre throughout the afternoon. Forecasters " +
        "said the storm would weaken as it moved inland overnight…",
      pubdate: "2026-11-22T11:00:00.000Z",
      pubdate_unix: 1795345200,
      score: 1,
      site: "The Daily Ledger",
      site_domain: "dailyledger.example",
      source_url: TRACKING,
      summary: "Volunteers filled sandbags at the community centre throughout the afternoon. Heavy rain and storm " +
        "surge flooded roads and knocked out power to thousands of homes.",
      title: "Flooding closes roads as coastal storm batters the shoreline",
      url: ARTICLE_URL,
    }],
  },
};

const answerResponse = {
  message: "The Daily Ledger (22 Nov 2026) reports: Forecasters said the storm would weaken as it moved inland " +
    "overnight. Heavy rain and storm surge flooded roads and knocked out power to thousands of homes. [1]\n\n" +
    `Sources:\n[1] The Daily Ledger (22 Nov 2026): Flooding closes roads as coastal storm batters the shoreline — ${ARTICLE_URL}`,
  citations: [{
    title: "Flooding closes roads as coastal storm batters the shoreline",
    url: ARTICLE_URL,
    source_url: TRACKING,
    site: "The Daily Ledger",
    pubdate: "2026-11-22T11:00:00.000Z",
  }],
};

const meta = { timezone: "UTC", generated_at: "2026-11-22T12:00:00.000Z" };
const window = { start_date: "2026-11-20", end_date: "2026-11-21" };

/** Examples by `METHOD path` as the document names them. */
export const OPENAPI_EXAMPLES: Record<string, OperationExamples> = {
  "GET /healthz": { responses: { 200: { status: "ok" } } },
  "GET /readyz": { responses: { 200: { status: "ok", checks: { kv: true, duckdb: true } } } },
  "POST /app/v2/search": {
    request: { query: "coastal storm flooding", similarity_top_k: 9, num_results: 1, search_algorithm: "semantic" },
    responses: { 200: searchResponse },
  },
  "POST /payproxy/v2/search": {
    request: { query: "coastal storm flooding", num_results: 1 },
    responses: { 200: searchResponse },
  },
  "POST /app/aimodel/{ai_model_id}": {
    request: { query: "Where is the storm flooding roads?" },
    responses: { 200: answerResponse },
  },
  "GET /v1/analytics/ask-ai": {
    responses: {
      200: {
        success: true,
        filters: window,
        summary: {
          widget_loads: 187,
          viewable_sessions: 118,
          engagement_queries: 176,
          total_clicks: 49,
          article_clicks: 42,
          cta_clicks: 7,
          sessions: 187,
          total_session_time_seconds: 3200,
          avg_session_duration_seconds: 17,
          viewability_rate: 63.1,
          engagement_rate: 94.12,
          engagement_session_rate: 25.67,
          query_to_click_rate: 27.84,
        },
        daily_breakdown: [
          {
            date: "2026-11-20",
            widget_loads: 103,
            viewable_sessions: 68,
            engagement_queries: 74,
            total_clicks: 21,
            sessions: 103,
          },
          {
            date: "2026-11-21",
            widget_loads: 84,
            viewable_sessions: 50,
            engagement_queries: 102,
            total_clicks: 28,
            sessions: 84,
          },
        ],
        meta,
      },
    },
  },
  "GET /v1/analytics/ask-ai/logs": {
    responses: {
      200: {
        data: [{
          timestamp: "2026-11-22T10:06:31.887Z",
          widget_id: WD,
          placement_id: "pl_sidebar",
          deployment_type: "embed",
          ai_agent: AM,
          referring_url: "https://dailyledger.example/travel/spring-guide",
          interaction_type: "free_form",
          prompt: "Where should I travel this spring?",
          response: "Here is what our newsroom reported about spring travel: a short grounded answer.",
        }],
        total_pages: 438,
        count: 438,
        meta,
      },
    },
  },
  "GET /v1/analytics/sponsored-conversations": {
    responses: {
      200: {
        success: true,
        filters: window,
        summary: {
          impressions: 28,
          queries: 42,
          sessions: 28,
          avg_session_duration_seconds: 30,
          total_clicks: 13,
          article_clicks: 6,
          cta_clicks: 7,
          engagement_rate: 150,
          conversion_rate: 46.43,
          avg_queries_per_session: 1.5,
        },
        daily_breakdown: [{ date: "2026-11-20", queries: 23, engagement_rate: 135.29, total_clicks: 7 }],
        campaign_breakdown: [{
          campaign_id: CP,
          campaign_name: "Spring Travel Sponsor",
          creative_ids: ["cr_1001", "cr_1002"],
          impressions: 28,
          queries: 42,
          total_clicks: 13,
          engagement_rate: 150,
        }],
        click_type_breakdown: [{ type: "cta", count: 7 }, { type: "article", count: 6 }],
        prompt_breakdown: [{
          prompt_id: "pm_01m81j18g0v2y5k7c9d1f3h5j7",
          prompt_text: "What are the best budget airlines?",
          impressions: 28,
          queries: 8,
          engagement_rate: 28.57,
        }],
        meta,
      },
    },
  },
  "POST /v1/events": {
    request: {
      widget_id: WD,
      events: [{ event_id: "0b6f7c1e-8a3d-4e55-9f0a-2f6c1d7e9b10", event_type: "widget_load", session_id: "s-1" }],
    },
    responses: { 202: { accepted: 1 } },
  },
  "GET /v1/data-models": {
    responses: {
      200: {
        data: [{
          id: DM,
          tenantId: TN,
          name: "Demo News Network",
          toolName: "demo-news",
          sites: [{ domain: "dailyledger.example", name: "The Daily Ledger" }],
          marketplace: true,
          createdAt: "2026-11-22T12:00:00.000Z",
        }],
      },
    },
  },
  "POST /v1/data-models/{data_model_id}/articles": {
    request: [{
      url: "https://dailyledger.example/local/ferry-strike-ends",
      title: "Ferry strike ends",
      body: "Ferries run again on every route from Monday, the operator said.",
    }],
    responses: {
      200: {
        received: 1,
        created: 1,
        updated: 0,
        failed: 0,
        results: [{
          index: 0,
          status: "created",
          id: "ar_01m81j18g00de7ceh6rz9s9dxa",
          url: "https://dailyledger.example/local/ferry-strike-ends",
        }],
      },
    },
  },
  "GET /v1/data-models/{data_model_id}/retention": { responses: { 200: { max_age_days: 90 } } },
  "POST /v1/data-models/{data_model_id}/sources": {
    request: { type: "rss", url: "https://dailyledger.example/feed.xml", interval_s: 900 },
    responses: {
      201: {
        id: "src_01m81j18g0x7w3bqk2d9n4f6ht",
        data_model_id: DM,
        type: "rss",
        url: "https://dailyledger.example/feed.xml",
        interval_s: 900,
        fetch_pages: false,
        created_at: "2026-11-22T12:00:00.000Z",
        last_polled_at: null,
        last_ok_at: null,
        last_status: null,
        last_error: null,
        next_poll_at: "2026-11-22T12:00:00.000Z",
        items_added: 0,
        items_updated: 0,
        consecutive_failures: 0,
        etag: null,
        last_modified: null,
      },
    },
  },
  "POST /zeroclick/v2/search": {
    request: { query: "coastal storm flooding", num_results: 1 },
    responses: { 200: searchResponse },
  },
  "GET /.well-known/oauth-authorization-server": {
    responses: {
      200: {
        issuer: BASE,
        authorization_endpoint: `${BASE}/oauth2/authorize`,
        token_endpoint: `${BASE}/oauth2/token`,
        registration_endpoint: `${BASE}/oauth2/register`,
        jwks_uri: `${BASE}/.well-known/jwks.json`,
        grant_types_supported: ["urn:ietf:params:oauth:grant-type:jwt-bearer", "authorization_code", "refresh_token"],
        response_types_supported: ["code"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
      },
    },
  },
  "POST /agent/identity": {
    request: { type: "anonymous" },
    responses: {
      201: {
        identity: {
          credential_id: "ag_01m81j18g05xcgh68rp7sq381t",
          type: "anonymous",
          state: "unclaimed",
          claimed: false,
          assertion:
            "eyJhbGciOiJFZERTQSIsInR5cCI6ImFnZW50LWFzc2VydGlvbitqd3QifQ.eyJzdWIiOiJhZ18wMW04MWoxOGcwNXhj.AkjP9xMPMJTDk1dw",
          assertion_expires_in: 259200,
          expires_at: "2026-11-25T12:00:00.000Z",
        },
        claim: { token: "clt_5Yu05pNNEC20xSSxMvI-HvJOLm95wTsg8x2xCjrgEnA", expires_in: 259200 },
      },
    },
  },
  "POST /oauth2/token": {
    responses: {
      200: {
        access_token: "eyJhbGciOiJFZERTQSIsImtpZCI6ImNQZ0VyUUZMZUxTUENJak4ifQ.eyJzdWIiOiJhZ18wMW04MWoxOGcwNXhj.Qm9vdA",
        token_type: "Bearer",
        expires_in: 900,
      },
    },
  },
  "GET /.well-known/mcp.json": {
    responses: {
      200: {
        name: "article-search",
        title: "Article search and real-time answers",
        version: "1.0.0",
        description: "Search news articles (domain and date filters, explanations), ask AI models grounded in fresh " +
          "articles, list models, and read Ask AI analytics.",
        endpoint: `${BASE}/mcp`,
        transport: { type: "streamable-http", stateless: true },
        protocolVersions: ["2025-11-25", "2025-06-18", "2025-03-26"],
        authentication: {
          schemes: ["bearer"],
          apiKey: "Authorization: Bearer ak_... (tenant scope)",
          agentToken: `Authorization: Bearer <access token from ${BASE}/oauth2/token>`,
          mcpResourceMetadata: `${BASE}/.well-known/oauth-protected-resource/mcp`,
        },
        payment: {
          scheme: "Payment",
          binding:
            "JSON-RPC error -32042 with data.challenges; credential in params._meta['org.paymentauth/credential']",
          prices: `${BASE}/services`,
        },
        tools: [{
          name: "search_articles",
          title: "Search articles",
          description:
            "Find news articles in a data model. Give `data_model_id` (from list_data_models) and a `query`.",
        }],
      },
    },
  },
  "POST /widget/v1/{wd}/ask": {
    request: { query: "Where is the storm flooding roads?", session_id: "s-1", interaction_type: "free_form" },
    responses: {},
  },
  "POST /widget/v1/{wd}/recommend": {
    request: { page_url: ARTICLE_URL, limit: 1 },
    responses: {
      200: {
        results: [{
          title: "Clean-up begins after coastal storm floods the seafront",
          site: "Metro Wire",
          url: TRACKING,
          image_url: IMAGE,
          published_at: "2026-11-21T20:56:10.000Z",
        }],
      },
    },
  },
};

type Json = Record<string, unknown>;

/**
 * The document with the examples merged in: a request example on the JSON body, and response
 * examples on the JSON content of their status. Operations or statuses the document lacks are
 * skipped (the test checks that none is).
 */
export function withExamples<T extends { paths?: object }>(doc: T): T {
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Json>>;
  for (const [key, ex] of Object.entries(OPENAPI_EXAMPLES)) {
    const [method, path] = key.split(" ") as [string, string];
    const op = paths[path]?.[method.toLowerCase()];
    if (!op) continue;
    const body = (op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
    if (ex.request !== undefined && body?.["application/json"]) body["application/json"].example = ex.request;
    const responses = (op.responses ?? {}) as Record<string, Json>;
    for (const [status, example] of Object.entries(ex.responses)) {
      const content = responses[status]?.content as Record<string, Json> | undefined;
      if (content?.["application/json"]) content["application/json"].example = example;
    }
  }
  return doc;
}
