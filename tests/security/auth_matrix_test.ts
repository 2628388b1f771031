/**
 * Who may call what, across every authenticated operation of /openapi.json: each one is sent as
 * documented with every credential it does not take (none, the operator's key, an agent's token
 * where only a tenant's key opens it and the reverse, forged agent tokens) and with another
 * tenant's key naming the first tenant's resources. None of them may get a success, and an answer
 * to another tenant never names the first tenant's resources. The right caller is sent too, so a
 * walk whose requests stopped at a gate for every caller cannot pass quietly.
 */
import assert from "node:assert/strict";
import { seedCommerceDemo } from "../../fixtures/commerce_demo.ts";
import { seedStorefront } from "../../fixtures/storefront.ts";
import { SourceRepo } from "../../core/sources/source.ts";
import { startAllowancePeer } from "../payproxy/_helpers.ts";
import { ORIGIN, widgetWorld } from "../widget/_world.ts";
import { anonymousAgentToken } from "./_agent_token.ts";
import { type Operation, sampleOf, type Schema } from "./_openapi.ts";

const HOST = "http://svc.test";

/** What a refused caller may get: not authenticated, not allowed, nothing of that name, or no such method (the stateless MCP GET and DELETE). */
const REFUSED = new Set([401, 403, 404, 405]);

/** Operations the document declares without a scheme that are still gated, and the credential that opens each. */
const GATED_WITHOUT_SCHEME: Readonly<Record<string, "operator" | "signature">> = {
  "GET /payproxy/metrics": "operator",
  "POST /internal/allowance": "signature",
};

/** Optional query parameters that pick one of a tenant's resources. */
const RESOURCE_PARAMS = /^(data_model_id|dm_id|widget_id|ai_model_id|agent_id|model_id)$/;

const b64url = (value: unknown) =>
  btoa(JSON.stringify(value)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");

/** Tokens made from a real agent token without its issuer's key: unsigned, re-claimed, and cut short. */
function forgedTokens(token: string): [string, string][] {
  const [header, payload, signature] = token.split(".") as [string, string, string];
  const claims = JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/")));
  return [
    ["alg none", `${b64url({ alg: "none", typ: "JWT" })}.${payload}.`],
    ["claims changed, signature kept", `${header}.${b64url({ ...claims, sub: `${claims.sub}x` })}.${signature}`],
    ["signature removed", `${header}.${payload}.`],
    ["HS256 over the same claims", `${b64url({ alg: "HS256", typ: "JWT" })}.${payload}.${signature}`],
  ];
}

/** Two tenants with their resources, an agent's token and the operator's key; limits raised for the walk. */
async function matrixWorld() {
  const peer = startAllowancePeer("allow");
  const w = await widgetWorld({
    env: {
      AGENT_AUTH_URL: peer.url,
      STOREFRONT_DEFAULT_SELLER: "demo",
      ANALYTICS_RATE_LIMIT_PER_MIN: "1000000",
      SEARCH_RATE_LIMIT_PER_MIN: "1000000",
      STOREFRONT_RATE_LIMIT: "1000000",
      PUBLIC_READS_PER_MIN_PER_ADDRESS: "1000000",
    },
  });
  const acme = await w.tenant("Acme");
  const bobco = await w.tenant("Bobco");
  // A source of Acme's, written straight to its store (registering one would probe its URL).
  const source = await new SourceRepo(w.deps.kv, w.clock).add({
    dataModelId: acme.dmNews,
    tenantId: acme.tenantId,
    url: "https://acme.example/feed.xml",
    type: "rss",
    intervalS: 900,
    fetchPages: false,
  }, 10);
  await seedStorefront(w.deps, { tenantId: acme.tenantId } as never);
  await seedCommerceDemo(w.deps, {} as never);
  const operator = await w.deps.operatorKeys.create();
  const agentToken = await anonymousAgentToken(w.app, HOST);

  /** Acme's resource for a path or required query parameter, by name. */
  const param = (name: string, template: string): string => {
    if (/^(data_model_id|dm_id)$/.test(name)) return acme.dmNews;
    if (name === "widget_id" || (name === "id" && template.startsWith("/v1/widgets/"))) return acme.widget.id;
    if (/^(ai_model_id|agent_id|model_id|aimodel_external_id|id)$/.test(name)) return acme.model.id;
    if (name === "source_id") return source.id;
    if (name === "url") return acme.articles[0]!.url;
    return "x";
  };
  /** What names Acme in an answer: its ids and its articles' URLs. */
  const acmeMarks = [acme.tenantId, acme.dmNews, acme.dmTech, acme.model.id, acme.widget.id, source.id, "/acme/"];
  const close = async () => {
    await w.close();
    await peer.close();
  };
  return { w, acme, bobco, operator: operator.key, agentToken, param, acmeMarks, [Symbol.asyncDispose]: close };
}

Deno.test("every authenticated operation refuses the wrong kind of credential, forged tokens and another tenant's key", async (t) => {
  await using m = await matrixWorld();
  const doc = await (await m.w.app.request("/openapi.json")).json();
  const schemas = doc.components?.schemas ?? {};
  const exercised: string[] = [];
  const faults: string[] = [];

  for (const [template, operations] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
    for (const [verb, op] of Object.entries(operations)) {
      const method = verb.toUpperCase();
      const name = `${method} ${template}`;
      const schemes = (op.security ?? []).flatMap((s) => Object.keys(s));
      const special = GATED_WITHOUT_SCHEME[name];
      if (schemes.length === 0 && !special) continue;
      await t.step(name, async () => {
        const params = op.parameters ?? [];
        const query = new URLSearchParams(
          params.filter((p) => p.in === "query" && p.required).map((p) => [p.name, m.param(p.name, template)]),
        ).toString();
        const path = template.replace(/\{(\w+)\}/g, (_, p) => encodeURIComponent(m.param(p, template))) +
          (query ? `?${query}` : "");
        const [mediaType, media] = Object.entries(op.requestBody?.content ?? {})[0] ?? [];
        const sample = media ? sampleOf(media.schema as Schema, schemas) : undefined;
        const body = mediaType === undefined
          ? undefined
          : mediaType === "application/x-www-form-urlencoded"
          ? new URLSearchParams(Object.entries(sample ?? {}).map(([k, v]) => [k, String(v)])).toString()
          : JSON.stringify(sample ?? {});
        const send = (authorization: string | null, url = path) =>
          m.w.app.request(`${HOST}${url}`, {
            method,
            headers: {
              ...(authorization ? { authorization } : {}),
              ...(mediaType ? { "content-type": mediaType } : {}),
              origin: ORIGIN,
              accept: "application/json, text/event-stream",
            },
            body: method === "GET" ? undefined : body,
          });

        const wrong: [string, string | null][] = [["no credential", null], ["a malformed key", "Bearer ak_x"]];
        if (special !== "operator") wrong.push(["the operator's key", `Bearer ${m.operator}`]);
        if (!schemes.includes("agentToken")) wrong.push(["an agent's token", `Bearer ${m.agentToken}`]);
        if (!schemes.includes("bearerAuth")) wrong.push(["a tenant's key", `Bearer ${m.acme.key}`]);
        if (schemes.includes("agentToken")) {
          for (const [label, forged] of forgedTokens(m.agentToken)) {
            wrong.push([`a forged token (${label})`, `Bearer ${forged}`]);
          }
        }
        for (const [label, authorization] of wrong) {
          const res = await send(authorization);
          const text = await res.text();
          if (!REFUSED.has(res.status)) faults.push(`${name} with ${label}: ${res.status} ${text.slice(0, 120)}`);
        }

        // Another tenant's key naming Acme's resources: in the path, in a required query parameter, or
        // in an optional one that picks a resource. Sent before Acme's own request, which may delete.
        if (schemes.includes("bearerAuth")) {
          const picks = params.filter((p) => p.in === "query" && !p.required && RESOURCE_PARAMS.test(p.name));
          const variants = [
            path,
            ...picks.map((p) => `${path}${path.includes("?") ? "&" : "?"}${p.name}=${m.param(p.name, template)}`),
          ];
          for (const [i, url] of variants.entries()) {
            const named = i > 0 || /\{\w+\}/.test(template) || query !== "";
            const res = await send(`Bearer ${m.bobco.key}`, url);
            const text = await res.text();
            const own = await send(`Bearer ${m.acme.key}`, url);
            await own.body?.cancel();
            if (i === 0 && own.ok) exercised.push(name);
            // The analytics routes answer another tenant's id as an unknown one, 400 `<param> not found` (spec 4.5).
            const unknownId = res.status === 400 && /^\{"message":"\w+ not found"\}$/.test(text);
            if (named && own.ok && !REFUSED.has(res.status) && !unknownId) {
              faults.push(`${name} (${url}) with another tenant's key: ${res.status} ${text.slice(0, 120)}`);
            }
            const leaked = m.acmeMarks.filter((mark) => text.includes(mark));
            if (leaked.length > 0) faults.push(`${name} (${url}) with another tenant's key names ${leaked.join(", ")}`);
          }
        }
      });
    }
  }
  assert.deepEqual(faults, []);
  // The right caller got a success on most tenant operations: the walk reached past the gates.
  assert.ok(exercised.length >= 26, `only ${exercised.length} operations answered their own tenant: ${exercised}`);
});

Deno.test("MCP tools: another tenant's key and an agent's token reach none of a tenant's private resources", async () => {
  await using m = await matrixWorld();
  const calls: [string, Record<string, unknown>][] = [
    ["search_articles", { data_model_id: m.acme.dmNews, query: "council" }],
    ["get_article", { data_model_id: m.acme.dmNews, url: m.acme.articles[0]!.url }],
    ["ask", { ai_model_id: m.acme.model.id, query: "What did the council decide?" }],
    ["analytics_summary", { widget_id: m.acme.widget.id }],
  ];
  const call = async (key: string, name: string, args: unknown) => {
    const res = await m.w.app.request(`${HOST}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
    });
    const text = await res.text();
    const refused = res.status !== 200 || /"isError":true|"error":\{/.test(text);
    return { refused, text };
  };
  const faults: string[] = [];
  for (const [name, args] of calls) {
    const own = await call(m.acme.key, name, args);
    if (own.refused) faults.push(`${name}: the owner is refused: ${own.text.slice(0, 160)}`);
    for (const [caller, key] of [["another tenant's key", m.bobco.key], ["an agent's token", m.agentToken]]) {
      const other = await call(key, name, args);
      if (!other.refused) faults.push(`${name} with ${caller}: answered ${other.text.slice(0, 160)}`);
      const leaked = m.acmeMarks.filter((mark) => other.text.includes(mark));
      if (leaked.length > 0) faults.push(`${name} with ${caller} names ${leaked.join(", ")}`);
    }
  }
  for (const name of ["list_data_models", "list_ai_models"]) {
    for (const [caller, key] of [["another tenant's key", m.bobco.key], ["an agent's token", m.agentToken]]) {
      const other = await call(key, name, {});
      const leaked = m.acmeMarks.filter((mark) => other.text.includes(mark));
      if (leaked.length > 0) faults.push(`${name} with ${caller} names ${leaked.join(", ")}`);
    }
  }
  assert.deepEqual(faults, []);
});
