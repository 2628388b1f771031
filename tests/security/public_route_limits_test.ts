import assert from "node:assert/strict";
import { createTestWorld } from "../_helpers.ts";

/**
 * Documented operations that need no credential (or only a free agent token) yet answer no 429, each with why it
 * may stay so. A new public operation fails the test below until it is limited (and its 429
 * documented) or listed here with a reason.
 */
const UNLIMITED_ON_PURPOSE: Record<string, string> = {
  // Probes: a constant answer, and a store probe an orchestrator must always reach.
  "GET /healthz": "liveness probe: a constant answer, no store read",
  "GET /readyz":
    "readiness probe: one KV read and a DuckDB ping, shared by the requests that arrive while it runs; a load balancer must never be refused",
  "GET /": "front page: an in-memory render; its store probe runs at most once a second whatever the traffic",
  // Served from memory with an ETag (304 on revalidation): cheaper than a limiter's KV write.
  "GET /dashboard": "page shell from memory with an ETag; the data behind it needs an API key",
  "GET /widget/v1/loader.js": "hashed script from memory with an ETag, cacheable by a CDN",
  "GET /widget/v1/assets/{name}": "hashed, immutable asset from memory",
  "GET /.well-known/mcp.json": "static server card built from configuration (public, max-age=300)",
  "GET /.well-known/oauth-authorization-server": "metadata from configuration, no store read (max-age=300)",
  "GET /.well-known/oauth-protected-resource": "metadata from configuration, no store read (max-age=300)",
  "GET /.well-known/oauth-protected-resource/mcp": "metadata from configuration, no store read (max-age=300)",
  "GET /.well-known/jwks.json": "public keys held in memory (reloaded on a timer, not per request)",
  // The click redirect: its only work beyond an HMAC check is the click gate's per-address counter
  // (CLICKS_PER_MIN_PER_ADDRESS), which already bounds it; refusing the redirect would cost a reader the article.
  "GET /r/{token}": "bounded by the click gate's per-address counter (CLICKS_PER_MIN_PER_ADDRESS)",
  // Signature-authenticated (a payproxy signature is a credential; the OpenAPI has no scheme for it).
  "POST /payproxy/v2/search": "payproxy signature",
  "POST /payproxy/aimodel/{aimodel_external_id}": "payproxy signature",
  "POST /zeroclick/v2/search": "payproxy signature",
  "POST /zeroclick/aimodel/{aimodel_external_id}": "payproxy signature",
  "POST /internal/allowance": "payproxy signature",
  "GET /payproxy/metrics": "operator key",
  // A constant 405 before any credential is read.
  "GET /mcp": "constant 405 (stateless server, POST only)",
  "DELETE /mcp": "constant 405 (no session to end)",
};

/**
 * Whether an operation is open to anyone: no `security`, or an alternative that is only an agent
 * token, which any address mints for free (an anonymous identity, then POST /oauth2/token).
 */
function reachableForFree(security: Record<string, unknown>[] | undefined): boolean {
  if (!security || security.length === 0) return true;
  return security.some((alt) => Object.keys(alt).length === 1 && "agentToken" in alt);
}

Deno.test("openapi: every operation open without a credential or with a free agent token is rate-limited (a documented 429) or listed as unlimited on purpose", async () => {
  await using w = await createTestWorld();
  const doc = await (await w.app.request("/openapi.json")).json();
  const unlimited: string[] = [];
  const listedButLimited: string[] = [];
  const documented = new Set<string>();
  for (
    const [path, ops] of Object.entries<Record<string, { security?: Record<string, unknown>[]; responses: object }>>(
      doc.paths,
    )
  ) {
    for (const [method, op] of Object.entries(ops)) {
      const name = `${method.toUpperCase()} ${path}`;
      documented.add(name);
      if (!reachableForFree(op.security)) continue;
      const limited = "429" in op.responses;
      if (!limited && !(name in UNLIMITED_ON_PURPOSE)) unlimited.push(name);
      if (limited && name in UNLIMITED_ON_PURPOSE) listedButLimited.push(name);
    }
  }
  assert.deepEqual(unlimited, [], "public operations with neither a limit nor a reason");
  assert.deepEqual(listedButLimited, [], "limited operations still on the unlimited list");
  const stale = Object.keys(UNLIMITED_ON_PURPOSE).filter((name) => !documented.has(name));
  assert.deepEqual(stale, [], "unlimited-list entries that name no documented operation");
});

Deno.test("GET /oauth2/authorize: the consent page counts per client address (STOREFRONT_RATE_LIMIT), 429 rate_limit_exceeded", async () => {
  await using w = await createTestWorld({ env: { STOREFRONT_RATE_LIMIT: "1", TRUST_PROXY: "1" } });
  const get = (address: string) =>
    w.app.request("/oauth2/authorize?client_id=unknown", { headers: { "x-forwarded-for": address } });
  assert.notEqual((await get("203.0.113.5")).status, 429);
  const refused = await get("203.0.113.5");
  assert.equal(refused.status, 429);
  assert.equal((await refused.json()).error, "rate_limit_exceeded");
  assert.ok(Number(refused.headers.get("retry-after")) >= 1);
  assert.notEqual((await get("198.51.100.9")).status, 429);
});
