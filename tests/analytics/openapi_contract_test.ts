import assert from "node:assert/strict";
import { Hono } from "hono";
import { DIMENSIONS, SORT_FIELDS } from "../../analytics/breakdown.ts";
import { COMPARE_MODES } from "../../analytics/compare.ts";
import { FORMATS } from "../../analytics/export.ts";
import { INTERVALS } from "../../analytics/metrics.ts";
import { memoryLogger } from "../../core/log.ts";
import { withRequestEnvelope } from "../../routes/middleware/request_envelope.ts";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture } from "./_fixture.ts";

type Param = { name: string; in: string; required?: boolean; schema: { enum?: string[] } };
type Operation = {
  parameters?: Param[];
  responses: Record<string, { content?: Record<string, { schema?: Schema }>; headers?: object }>;
};

type Schema = { $ref?: string; properties?: Record<string, unknown>; required?: string[] };

/** A schema, or the component a `$ref` names. */
function resolve(doc: { components?: { schemas?: Record<string, Schema> } }, schema: Schema | undefined) {
  const ref = schema?.$ref?.replace("#/components/schemas/", "");
  return ref ? doc.components?.schemas?.[ref] : schema;
}

/** A valid request of every analytics route (the ones that need a parameter have it). */
const ROUTES: Record<string, string> = {
  "/v1/analytics/ask-ai": "",
  "/v1/analytics/ask-ai/logs": "",
  "/v1/analytics/sponsored-conversations": "",
  "/v1/analytics/session-intelligence": "",
  "/v1/analytics/ask-ai/breakdown": "dimension=date",
  "/v1/analytics/realtime": "",
  "/v1/analytics/articles": "",
  "/v1/analytics/agents": "",
  "/v1/analytics/dashboard": "",
};

/**
 * The app behind a recorder of the query parameters its handlers read (by name, through
 * `c.req.query(name)` or the object `c.req.query()` returns), per request path.
 */
function recording(app: Hono) {
  const read = new Map<string, Set<string>>();
  const outer = new Hono();
  outer.use("*", async (c, next) => {
    const names = new Set<string>();
    read.set(c.req.path, names);
    const req = c.req as unknown as { query: (name?: string) => unknown };
    const query = req.query.bind(c.req);
    req.query = (name?: string) => {
      if (name !== undefined) {
        names.add(name);
        return query(name);
      }
      return new Proxy(query() as Record<string, string>, {
        get(target, p, receiver) {
          if (typeof p === "string") names.add(p);
          return Reflect.get(target, p, receiver);
        },
      });
    };
    await next();
  });
  outer.route("/", app);
  // The app's root around the recorder, as around the app (routes/middleware/request_envelope.ts).
  outer.fetch = withRequestEnvelope(outer.fetch, memoryLogger()) as typeof outer.fetch;
  return { outer, read };
}

Deno.test("OpenAPI: every query parameter an analytics handler reads is documented, and every documented one is read", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  await loadFixture(world);
  const doc = await (await world.w.app.request("/openapi.json")).json();
  const { outer, read } = recording(world.w.app as unknown as Hono);
  for (const [path, qs] of Object.entries(ROUTES)) {
    const op: Operation = doc.paths[path]?.get;
    assert.ok(op, `${path} is documented`);
    const documented = new Set((op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name));
    const res = await outer.request(`${path}${qs ? `?${qs}` : ""}`, { headers: bearer(world.key) });
    assert.equal(res.status, 200, path);
    await res.body?.cancel();
    const names = read.get(path)!;
    assert.deepEqual([...names].filter((n) => !documented.has(n)).sort(), [], `${path}: read but not documented`);
    assert.deepEqual([...documented].filter((n) => !names.has(n)).sort(), [], `${path}: documented but never read`);
  }
});

Deno.test("OpenAPI: each enum lists exactly the values the code takes; each value is accepted and any other is a 400", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "1000" });
  await loadFixture(world);
  const doc = await (await world.w.app.request("/openapi.json")).json();
  const expected: Record<string, readonly string[]> = {
    dimension: DIMENSIONS,
    interval: INTERVALS,
    sort: SORT_FIELDS,
    order: ["asc", "desc"],
    format: FORMATS,
    compare: COMPARE_MODES,
  };
  let checked = 0;
  for (const [path, qs] of Object.entries(ROUTES)) {
    const op: Operation = doc.paths[path].get;
    for (const p of op.parameters ?? []) {
      if (!p.schema.enum) continue;
      assert.deepEqual(p.schema.enum, [...expected[p.name]!], `${path} ${p.name}`);
      for (const value of [...p.schema.enum, "not_a_value"]) {
        const query = new URLSearchParams(qs);
        query.set(p.name, value);
        if (p.name === "interval") query.set("dimension", "date");
        const res = await world.w.app.request(`${path}?${query}`, { headers: bearer(world.key) });
        await res.body?.cancel();
        assert.equal(res.status, value === "not_a_value" ? 400 : 200, `${path} ${p.name}=${value}`);
        checked++;
      }
    }
  }
  assert.ok(checked > 40, `${checked} enum values checked`);
});

Deno.test("OpenAPI: every error status an analytics route answers is documented with its {message} body", async () => {
  await using world = await analyticsWorld({ ANALYTICS_RATE_LIMIT_PER_MIN: "3" });
  const doc = await (await world.w.app.request("/openapi.json")).json();
  const revoked = await world.w.tenantWithKey("Revoked");
  await world.w.deps.apiKeys.revoke(revoked.keyId);
  for (const [path, qs] of Object.entries(ROUTES)) {
    const op: Operation = doc.paths[path].get;
    const url = `${path}?${qs}${qs ? "&" : ""}timezone=Nowhere/Else`;
    const answers: [number, Response][] = [
      [400, await world.w.app.request(url, { headers: bearer(world.key) })],
      [401, await world.w.app.request(path)],
      [403, await world.w.app.request(path, { headers: bearer(revoked.key) })],
      [403, await world.w.app.request(path, { headers: bearer(`ak_${"x".repeat(43)}`) })],
    ];
    for (let i = 0; i < 3; i++) await (await world.w.app.request(url, { headers: bearer(world.key) })).body?.cancel();
    answers.push([429, await world.w.app.request(path, { headers: bearer(world.key) })]);
    for (const [status, res] of answers) {
      assert.equal(res.status, status, `${path} ${status}`);
      const body = await res.json();
      assert.equal(typeof body.message, "string", `${path} ${status}`);
      const documented = op.responses[String(status)];
      assert.ok(documented, `${path} documents ${status}`);
      const schema = resolve(doc, documented.content?.["application/json"]?.schema);
      assert.ok(schema?.properties?.message, `${path} ${status} documents its {message} body`);
      assert.deepEqual(schema?.required, ["message"], `${path} ${status}`);
    }
    assert.ok(op.responses["429"]!.headers && "Retry-After" in op.responses["429"]!.headers, `${path} 429 Retry-After`);
    world.w.clock.advance(60_000);
  }
});
