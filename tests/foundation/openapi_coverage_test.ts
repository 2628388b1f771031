import assert from "node:assert/strict";
import { createTestWorld } from "../_helpers.ts";

/**
 * Routes the app serves that `/openapi.json` leaves out on purpose, each with why. Every other
 * route must be documented: a new route without an OpenAPI definition fails the test below.
 */
const UNDOCUMENTED: Record<string, string> = {
  "GET /openapi.json": "the document itself",
  "GET /openapi-3.0.json": "the same document in OpenAPI 3.0, which the API reference page draws faster",
  "GET /docs": "HTML page: the API reference (Swagger UI over the document)",
  "GET /docs/assets/{name}":
    "the API reference's Swagger UI bundle and style from the installed package, and its own init",
  "GET /claim/{link}": "HTML page a human opens from the claim e-mail",
  "POST /claim/{link}": "the claim page's HTML form",
  "POST /checkout/{reference}": "the hosted checkout page's HTML form",
  "POST /oauth2/authorize": "the OAuth consent page's HTML form",
  "GET /dev/outbox": "HTML page: the demo's outbox (MAIL_OUTBOX=true, operator key)",
  "GET /dashboard/assets/{name}": "the dashboard page's own script and style, and uPlot from the installed package",
  "GET /.well-known/oauth-authorization-server/network":
    "RFC 8414 path-inserted form of the documented metadata; its path follows NETWORK_API_URL",
};

/** `METHOD /path/{param}` of every route the app answers (middleware and family 404s left out). */
function servedRoutes(routes: readonly { method: string; path: string }[]): Set<string> {
  const out = new Set<string>();
  for (const r of routes) {
    if (r.method === "ALL" || r.path.includes("*")) continue;
    out.add(`${r.method} ${r.path.replaceAll(/:([^/]+)/g, "{$1}")}`);
  }
  return out;
}

Deno.test("every route the app serves is in /openapi.json or in the list of undocumented routes, and back", async () => {
  // With the outbox on, so that every route is served.
  await using w = await createTestWorld({ env: { MAIL_OUTBOX: "true" } });
  const doc = await (await w.app.request("/openapi.json")).json();
  const documented = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
  }
  const served = servedRoutes(w.app.routes);

  const missing = [...served].filter((r) => !documented.has(r) && !(r in UNDOCUMENTED));
  assert.deepEqual(missing, [], "served but neither documented nor listed as undocumented");
  const phantom = [...documented].filter((r) => !served.has(r));
  assert.deepEqual(phantom, [], "documented but not served");
  const stale = Object.keys(UNDOCUMENTED).filter((r) => !served.has(r) || documented.has(r));
  assert.deepEqual(stale, [], "listed as undocumented but not served, or documented after all");
  // The comparison saw the whole app, not an empty list.
  assert.ok(served.size >= 40, `only ${served.size} routes`);
});

Deno.test("a path no route serves answers 404 in the body of the family whose prefix it is under", async () => {
  await using w = await createTestWorld();
  const get = (path: string) => w.app.request(`http://svc.test${path}`);
  const payproxy = await get("/payproxy/nope");
  assert.equal(payproxy.status, 404);
  assert.equal(await payproxy.text(), "");
  for (const path of ["/plans/x/nope", "/.well-known/nope", "/agent/entitlements/nope"]) {
    const res = await get(path);
    assert.equal(res.status, 404, path);
    assert.equal((await res.json()).error, "not_found", path);
  }
  const oauth = await get("/oauth2/nope");
  assert.equal(oauth.status, 404);
  assert.deepEqual(await oauth.json(), { error: "not_found", error_description: "Not found" });
  for (const path of ["/nope", "/app/nope", "/r/a/b", "/v1/analytics/nope"]) {
    const res = await get(path);
    assert.ok(res.status === 404 || res.status === 401, path);
    assert.equal(typeof (await res.json()).message, "string", path);
  }
});

Deno.test("a second app in the process documents the same /openapi.json, its schemas built once per process", async () => {
  // Some route schemas are kept per process (by the config values they depend on) and shared by
  // every app: the second app's document, and one built with other limits, must be what a first
  // app's would be, and each app checks its own limits.
  const built = async (env: Record<string, string> = {}) => {
    await using w = await createTestWorld({ env });
    const doc = await (await w.app.request("/openapi.json")).text();
    const image = await w.app.request("/img?src=unknown&w=1500");
    await image.body?.cancel();
    return { doc, imageStatus: image.status };
  };
  const first = await built();
  assert.deepEqual(await built(), first);
  // 1500 is within the default largest dimension (2048): the unknown reference answers 404.
  assert.equal(first.imageStatus, 404);
  const other = await built({ IMAGE_MAX_DIMENSION: "1000", SOURCE_MIN_INTERVAL_S: "120" });
  assert.notEqual(other.doc, first.doc);
  assert.match(other.doc, /"minimum":120/);
  assert.match(first.doc, /"minimum":60/);
  assert.equal(other.imageStatus, 400);
});
