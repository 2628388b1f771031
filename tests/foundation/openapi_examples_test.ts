import assert from "node:assert/strict";
import { bearer, createTestWorld } from "../_helpers.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedDemoArticles } from "../../fixtures/demo_articles.ts";
import { OPENAPI_EXAMPLES } from "../../routes/openapi_examples.ts";
import { storefrontWorld } from "../storefront/_world.ts";

type Json = Record<string, unknown>;
type Doc = { paths: Record<string, Record<string, Json>> };

/** Every key path of an example (`a.b[].c`) that the live answer lacks: a field the example made up. */
function unknownKeys(example: unknown, live: unknown, at = ""): string[] {
  if (Array.isArray(example)) {
    if (!Array.isArray(live)) return [`${at} (not an array)`];
    if (!example.length || !live.length) return [];
    return unknownKeys(example[0], live[0], `${at}[]`);
  }
  if (example && typeof example === "object") {
    if (!live || typeof live !== "object") return [`${at} (not an object)`];
    return Object.entries(example as Json).flatMap(([k, v]) =>
      k in (live as Json) ? unknownKeys(v, (live as Json)[k], `${at}.${k}`) : [`${at}.${k}`]
    );
  }
  return [];
}

const topKeys = (x: unknown) => Object.keys(x as Json).sort();

Deno.test("OpenAPI examples: every one lands on a documented JSON body or answer, and every route family has some", async () => {
  await using w = await createTestWorld();
  const doc: Doc = await (await w.app.request("/openapi.json")).json();
  const families = new Set<string>();
  const withExample = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags as string[] | undefined)?.[0] ?? "";
      families.add(tag);
      const key = `${method.toUpperCase()} ${path}`;
      const ex = OPENAPI_EXAMPLES[key];
      if (!ex) continue;
      const body = ((op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined)?.[
        "application/json"
      ];
      if (ex.request !== undefined) assert.deepEqual(body?.example, ex.request, `${key} request`);
      for (const [status, example] of Object.entries(ex.responses)) {
        const content = ((op.responses as Record<string, Json>)[status]?.content as Record<string, Json>)?.[
          "application/json"
        ];
        assert.deepEqual(content?.example, example, `${key} ${status}`);
        withExample.add(tag);
      }
    }
  }
  for (const key of Object.keys(OPENAPI_EXAMPLES)) {
    const [method, path] = key.split(" ") as [string, string];
    assert.ok(doc.paths[path]?.[method.toLowerCase()], `${key} is a documented operation`);
  }
  // Every family has an example answer (the MCP family by its server card: /mcp itself speaks JSON-RPC).
  assert.deepEqual([...families].filter((f) => !withExample.has(f)), []);
});

Deno.test("OpenAPI examples have the shapes the demo answers: no field the service does not send", async () => {
  await using w = await createTestWorld();
  const seeded = await seedDemo(w.deps, [seedDemoArticles]);
  const { dataModelId: dm, aiModelId: am } = seeded.ids;
  const h = { ...bearer(seeded.apiKey!), "content-type": "application/json" };
  const live = async (key: string, path: string, init: RequestInit = {}) => {
    const ex = OPENAPI_EXAMPLES[key]!;
    const res = await w.app.request(path, {
      ...init,
      headers: h,
      ...(ex.request !== undefined ? { method: key.split(" ")[0], body: JSON.stringify(ex.request) } : {}),
    });
    const [status, example] = Object.entries(ex.responses)[0]!;
    assert.equal(String(res.status), status, `${key}: ${res.status}`);
    const body = await res.json();
    assert.deepEqual(unknownKeys(example, body), [], key);
    assert.deepEqual(topKeys(example), topKeys(body), `${key}: top-level fields`);
  };
  await live("POST /app/v2/search", `/app/v2/search?data_model_id=${dm}`);
  await live("POST /app/aimodel/{ai_model_id}", `/app/aimodel/${am}`);
  await live("GET /v1/analytics/ask-ai", "/v1/analytics/ask-ai?start_date=2026-11-20&end_date=2026-11-21");
  await live("GET /v1/analytics/ask-ai/logs", "/v1/analytics/ask-ai/logs");
  await live(
    "GET /v1/analytics/sponsored-conversations",
    "/v1/analytics/sponsored-conversations?start_date=2026-11-20&end_date=2026-11-21",
  );
  await live("GET /v1/data-models", "/v1/data-models");
  await live("POST /v1/data-models/{data_model_id}/articles", `/v1/data-models/${dm}/articles`);
  await live("GET /v1/data-models/{data_model_id}/retention", `/v1/data-models/${dm}/retention`);
  await live("GET /.well-known/mcp.json", "/.well-known/mcp.json");
  await live("GET /healthz", "/healthz");
});

Deno.test("OpenAPI examples of the storefront have the shapes it answers", async () => {
  await using w = await storefrontWorld();
  const res = await w.post("/agent/identity", OPENAPI_EXAMPLES["POST /agent/identity"]!.request);
  const body = await res.json();
  const example = OPENAPI_EXAMPLES["POST /agent/identity"]!.responses[201];
  assert.deepEqual(unknownKeys(example, body), []);
  assert.deepEqual(topKeys(example), topKeys(body));
  const meta = await (await w.app.request("http://svc.test/.well-known/oauth-authorization-server")).json();
  assert.deepEqual(
    unknownKeys(OPENAPI_EXAMPLES["GET /.well-known/oauth-authorization-server"]!.responses[200], meta),
    [],
  );
});
