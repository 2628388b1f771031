import assert from "node:assert/strict";
import { createTestWorld } from "../_helpers.ts";

Deno.test("GET /openapi.json documents every analytics route and parameter added beside the spec's four", async () => {
  await using w = await createTestWorld();
  const doc = await (await w.app.request("/openapi.json")).json();
  const params = (path: string) =>
    (doc.paths[path]?.get?.parameters ?? []).map((p: { name: string; in: string }) => `${p.in}:${p.name}`);
  for (
    const [path, expected] of [
      ["/v1/analytics/ask-ai", ["timezone", "compare"]],
      ["/v1/analytics/ask-ai/logs", ["timezone", "format"]],
      ["/v1/analytics/sponsored-conversations", ["timezone"]],
      ["/v1/analytics/session-intelligence", ["timezone"]],
      [
        "/v1/analytics/ask-ai/breakdown",
        ["dimension", "interval", "sort", "order", "limit", "format", "timezone", "compare", "widget_id"],
      ],
      ["/v1/analytics/realtime", ["widget_id", "timezone"]],
      ["/v1/analytics/articles", ["start_date", "end_date", "timezone", "limit", "data_model_id"]],
      ["/v1/analytics/agents", ["start_date", "end_date", "timezone", "limit"]],
      ["/dashboard", ["start_date", "end_date", "timezone", "compare"]],
    ] as const
  ) {
    assert.ok(doc.paths[path]?.get, `${path} documented`);
    for (const name of expected) assert.ok(params(path).includes(`query:${name}`), `${path} ${name}`);
  }
  const dims = doc.paths["/v1/analytics/ask-ai/breakdown"].get.parameters.find((p: { name: string }) =>
    p.name === "dimension"
  );
  assert.deepEqual(dims.schema.enum, [
    "date",
    "widget_id",
    "placement_id",
    "deployment_type",
    "interaction_type",
    "referring_url",
    "ai_agent",
    "intent",
    "category",
  ]);
  assert.ok(doc.paths["/v1/analytics/ask-ai/logs"].get.responses["200"].content["text/csv"]);
});
