/**
 * Every operation the OpenAPI document describes, fed hostile input built from its own schema.
 * Each path, query and header parameter, each body field, and each field one level down (in an
 * object or an array's element) takes in turn an empty or 100,000-character string, numbers at and
 * past the edges, a lone surrogate, a NUL, a traversal and (body fields) every wrong JSON type. The
 * body as a whole is empty, cut short, not JSON, the wrong JSON type, nested 100,000 deep or 3 MB.
 * The two bodies the document describes in prose (events, articles) get each field of one item.
 * MCP tools get the same values per argument, from a tenant's key and from an agent's token (the
 * paid path), and `arguments` itself is null, an array or a string. Each request passes the gates
 * as a real caller's would (bearer key, payproxy signature, agent token, widget origin; rate limits
 * raised), so validation is what answers.
 *
 * Whatever comes back: never a 5xx, never a library's words, never the input in an error, in a
 * header or as markup in a page, always an `X-Request-Id`; a JSON body parses. Each operation also
 * gets hostile `Authorization` headers. And the walk reaches past the gates: an operation that only
 * ever answered 401/404/429 is named, so a harness that stopped authenticating cannot pass quietly.
 * New routes are covered as soon as they are documented.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { eventInputSchema } from "../../analytics/schema.ts";
import { newId } from "../../core/ids.ts";
import { articleInputSchema } from "../../core/search/store/articles.ts";
import { seedCommerceDemo } from "../../fixtures/commerce_demo.ts";
import { seedPayproxySecret } from "../../fixtures/payproxy_demo.ts";
import { seedStorefront } from "../../fixtures/storefront.ts";
import { startServer } from "../../routes/server.ts";
import { signedInit, startAllowancePeer } from "../payproxy/_helpers.ts";
import { ORIGIN, widgetWorld } from "../widget/_world.ts";
import { echoesMarker, LIBRARY_TEXT, MARKER } from "./_leaks.ts";
import { anonymousAgentToken } from "./_agent_token.ts";
import { type Operation, type Parameter, resolved, sampleOf, type Schema } from "./_openapi.ts";

const HOST = "http://svc.test";

/** What every body field and MCP argument takes in turn: each JSON type, and numbers at and past the edges. */
const HOSTILE_VALUES: readonly unknown[] = [
  MARKER,
  "",
  -1,
  0,
  1.5,
  1e308,
  2 ** 53 + 1,
  true,
  null,
  [],
  {},
  [MARKER],
  { a: MARKER },
];

/** What a field that takes text (or any type) takes as well: the strings that differ as text. */
const HOSTILE_STRINGS: readonly string[] = [
  "x".repeat(100_000),
  `\ud800${MARKER}`,
  `${MARKER}\u0000`,
  "../../etc/passwd",
  "%00",
  "1e999",
];

/**
 * What every path and query parameter takes in turn. A parameter is text, so a JSON `[]`, `{}` or
 * `true` reaches it as just another string: only the texts that differ.
 */
const HOSTILE_TEXTS: readonly string[] = [
  MARKER,
  "",
  "x".repeat(100_000),
  `\ud800${MARKER}`,
  `${MARKER}\u0000`,
  "../../etc/passwd",
  "%00",
];

/** What a parameter that is not a plain string (a number, a boolean, an enum, a date) takes as well. */
const HOSTILE_NUMBER_TEXTS: readonly string[] = ["-1", "0", "1.5", "1e999", "9007199254740993", "null", "true"];

/** What every header parameter takes in turn (a header cannot carry a NUL or a lone surrogate). */
const HOSTILE_HEADER_VALUES: readonly string[] = [MARKER, "", "x".repeat(10_000)];

/** `Authorization` headers no caller holds: a marker in each scheme's place, and no scheme at all. */
const HOSTILE_AUTHORIZATIONS: readonly string[] = [
  `Bearer ${MARKER}`,
  `Bearer ak_${MARKER}`,
  `Bearer eyJ${MARKER}.e30.x`,
  `Payment ${MARKER}`,
  `Basic ${MARKER}`,
  MARKER,
  `Bearer ${"x".repeat(10_000)}`,
];

/** Whole bodies that are not what any route takes. */
const HOSTILE_BODIES: readonly string[] = [
  "",
  "{",
  MARKER,
  "[]",
  "null",
  "1",
  JSON.stringify(MARKER),
  "[".repeat(100_000),
  JSON.stringify({ a: "x".repeat(3_000_000) }),
];

/** Answers that mean the request stopped at a gate (auth, route, method, media type, rate limit). */
const GATE_STATUSES = new Set([401, 403, 404, 405, 406, 429]);

/**
 * Operations served by another's handler (routes/zeroclick.ts builds the payproxy routes under its
 * own prefix; only the 401 body differs): they get the request as documented and the whole hostile
 * bodies, not every field again.
 */
const TWINS: Readonly<Record<string, string>> = {
  "POST /zeroclick/v2/search": "POST /payproxy/v2/search",
  "POST /zeroclick/aimodel/{aimodel_external_id}": "POST /payproxy/aimodel/{aimodel_external_id}",
};

/** Operations that answer only at a gate whatever the input, and why that is right. */
const GATE_ONLY: Readonly<Record<string, string>> = {
  "GET /mcp": "the stateless transport has no stream to open (405)",
  "DELETE /mcp": "the stateless transport has no session to end (405)",
  "POST /internal/allowance": "only the payment layer's signature opens it (401)",
  "GET /payments/{reference}": "an unknown reference is not found (404)",
  "GET /checkout/{reference}": "an unknown reference is not found (404)",
  "GET /r/{token}": "only a link the service signed opens (404)",
  "GET /widget/v1/assets/{name}": "only the built assets' names exist (404)",
};

/** True when `p` takes any text (a string with no enum, format or pattern). */
const takesAnyText = (p: Parameter) =>
  p.schema?.type === "string" && !p.schema.enum && !p.schema.format && !p.schema.pattern;

/** A body validated item by item in code: the item's schema (JSON Schema), a valid item, the body that carries it. */
interface ItemBody {
  schema: Schema;
  item: Record<string, unknown>;
  wrap(item: Record<string, unknown>): unknown;
}

/** One request of the walk. */
interface Probe {
  label: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** The object schema a field holds (itself, or its array's elements), when it has named fields. */
function innerObject(schema: Schema, schemas: Record<string, Schema>): { schema: Schema; array: boolean } | null {
  const own = resolved(schema, schemas);
  const array = own?.type === "array";
  const object = resolved(array ? own.items : own, schemas);
  return object?.type === "object" && object.properties && Object.keys(object.properties).length > 0
    ? { schema: object, array }
    : null;
}

/**
 * The hostile values of a field: every JSON type, and the strings that differ as text unless the
 * field takes only numbers or booleans (to which any string is just the wrong type).
 */
function valuesFor(schema: Schema, schemas: Record<string, Schema>): readonly unknown[] {
  schema = resolved(schema, schemas);
  const types = [schema?.type, ...(schema?.anyOf ?? schema?.oneOf ?? []).map((s: Schema) => s?.type)].flat()
    .filter((t) => t && t !== "null");
  const onlyScalars = types.length > 0 && types.every((t) => t === "integer" || t === "number" || t === "boolean");
  return onlyScalars ? HOSTILE_VALUES : [...HOSTILE_VALUES, ...HOSTILE_STRINGS];
}

/** A path segment for `value`, also for a string URL encoding refuses (a lone surrogate: its raw bytes). */
function pathSegment(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return `%ED%A0%80${encodeURIComponent(value.slice(1))}`;
  }
}

/**
 * The requests of one operation: each parameter, then (with a body) each whole hostile body and
 * each field, take the hostile values in turn, after the request as documented; everything else stays
 * valid (`valid`).
 */
function* probesOf(
  method: string,
  template: string,
  op: Operation,
  schemas: Record<string, Schema>,
  valid: { param(name: string, template: string): string; headers: Record<string, string>; items?: ItemBody },
): Generator<Probe> {
  const params = op.parameters ?? [];
  const pathWith = (over: Record<string, string> = {}) =>
    template.replace(/\{(\w+)\}/g, (_, name) => pathSegment(over[name] ?? valid.param(name, template)));
  const requiredQuery = Object.fromEntries(
    params.filter((p) => p.in === "query" && p.required).map((p) => [p.name, valid.param(p.name, template)]),
  );
  const url = (query: Record<string, string>, over?: Record<string, string>) => {
    const qs = new URLSearchParams(query).toString();
    return `${pathWith(over)}${qs ? `?${qs}` : ""}`;
  };
  const [mediaType, media] = Object.entries(op.requestBody?.content ?? {})[0] ?? [];
  const form = mediaType === "application/x-www-form-urlencoded";
  const encode = (value: unknown) =>
    form
      ? new URLSearchParams(Object.entries(value ?? {}).map(([k, v]) => [k, String(v)])).toString()
      : JSON.stringify(value);
  const sample = media ? sampleOf(media.schema, schemas) : undefined;
  const body = media ? encode(sample) : undefined;
  const headers = { ...valid.headers, ...(mediaType ? { "content-type": mediaType } : {}) };
  const show = (v: unknown) => (typeof v === "string" ? JSON.stringify(v) : String(JSON.stringify(v))).slice(0, 24);

  yield { label: "as documented", method, path: url(requiredQuery), headers, body };
  // The credential itself, hostile: a gate's refusal names no part of it.
  for (const authorization of HOSTILE_AUTHORIZATIONS) {
    const label = `authorization=${show(authorization)}`;
    yield { label, method, path: url(requiredQuery), headers: { ...headers, authorization }, body };
  }
  for (const p of params) {
    // A header value cannot hold a NUL or a lone surrogate: fetch refuses to send them.
    const values = p.in === "header"
      ? HOSTILE_HEADER_VALUES
      : takesAnyText(p)
      ? HOSTILE_TEXTS
      : [...HOSTILE_TEXTS, ...HOSTILE_NUMBER_TEXTS];
    for (const text of values) {
      const label = `${p.in} ${p.name}=${show(text)}`;
      if (p.in === "path") yield { label, method, path: url(requiredQuery, { [p.name]: text }), headers, body };
      if (p.in === "query") yield { label, method, path: url({ ...requiredQuery, [p.name]: text }), headers, body };
      if (p.in === "header") {
        yield { label, method, path: url(requiredQuery), headers: { ...headers, [p.name]: text }, body };
      }
    }
  }
  if (!media) return;
  const path = url(requiredQuery);
  for (const raw of HOSTILE_BODIES) yield { label: `body ${show(raw)}`, method, path, headers, body: raw };
  const properties = resolved(media.schema, schemas);
  const base = typeof sample === "object" && sample !== null ? sample : {};
  for (const [field, schema] of Object.entries<Schema>(properties?.properties ?? {})) {
    for (const v of valuesFor(schema, schemas)) {
      yield { label: `field ${field}=${show(v)}`, method, path, headers, body: encode({ ...base, [field]: v }) };
    }
    if (form) continue;
    // One level down: each field of an object, or of an array's one element, in turn.
    const inner = innerObject(schema, schemas);
    if (!inner) continue;
    const element = sampleOf(inner.schema, schemas) as Record<string, unknown>;
    for (const [key, innerSchema] of Object.entries<Schema>(inner.schema.properties)) {
      for (const v of valuesFor(innerSchema, schemas)) {
        const value = { ...element, [key]: v };
        yield {
          label: `field ${field}${inner.array ? "[0]" : ""}.${key}=${show(v)}`,
          method,
          path,
          headers,
          body: encode({ ...base, [field]: inner.array ? [value] : value }),
        };
      }
    }
  }
  // A body the document describes in prose, validated item by item: each field of a valid item in turn.
  if (valid.items) {
    const { schema: itemSchema, item, wrap } = valid.items;
    for (const [field, fieldSchema] of Object.entries<Schema>(itemSchema.properties)) {
      for (const v of valuesFor(fieldSchema, {})) {
        yield {
          label: `item ${field}=${show(v)}`,
          method,
          path,
          headers,
          body: JSON.stringify(wrap({ ...item, [field]: v })),
        };
      }
    }
  }
  // A field the schema does not have, named by the caller: a strict schema must refuse it without naming it.
  yield { label: "a field named with the marker", method, path, headers, body: encode({ ...base, [MARKER]: 1 }) };
  yield {
    label: "field __proto__ and constructor",
    method,
    path,
    headers,
    body: form
      ? encode({ constructor: MARKER })
      : `{"__proto__":{"polluted":1},"constructor":${JSON.stringify(MARKER)}}`,
  };
}

/**
 * A world where every gate can be passed: a tenant (bearer key, data models with articles, an AI
 * model and a widget, all on the marketplace), the demo seller with its plans and signing secret,
 * an agent's access token, an allowance peer; limits raised so the walk is not rate-limited. The
 * network is off: an outbound fetch to anything but the local peers fails and is recorded.
 */
async function fuzzWorld() {
  const peer = startAllowancePeer("allow");
  const outbound: string[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.hostname === "127.0.0.1") return globalThis.fetch(input, init);
    outbound.push(url.origin);
    return Promise.reject(new TypeError("the network is off in this test"));
  };
  const w = await widgetWorld({
    fetch,
    env: {
      AGENT_AUTH_URL: peer.url,
      STOREFRONT_DEFAULT_SELLER: "demo",
      ANALYTICS_RATE_LIMIT_PER_MIN: "1000000",
      SEARCH_RATE_LIMIT_PER_MIN: "1000000",
      WIDGET_RATE_LIMIT_PER_ADDRESS: "1000000",
      WIDGET_RATE_LIMIT_PER_WIDGET: "10000000",
      WIDGET_DAILY_ANSWER_CAP: "10000000",
      STOREFRONT_RATE_LIMIT: "1000000",
      PUBLIC_READS_PER_MIN_PER_ADDRESS: "1000000",
    },
  });
  const acme = await w.tenant("Acme");
  const dataModel = await w.deps.repos.dataModels.get(acme.dmNews);
  await w.deps.repos.dataModels.update({ ...dataModel!, marketplace: true, toolName: "acme-news" });
  await w.deps.repos.aiModels.update({ ...acme.model, marketplace: true, toolName: "acme-assistant" });
  const secret = await w.deps.payproxy.secrets.create("seller-a");
  await seedStorefront(w.deps, { tenantId: acme.tenantId } as never);
  await seedPayproxySecret(w.deps, {} as never);
  await seedCommerceDemo(w.deps, {} as never);
  const [plan] = await w.deps.commerce.catalog.listPlans("demo");
  // PATCH /v1/widgets/{id} changes the widget it is given: a spare one, so the widget routes keep theirs.
  const spareWidget = await w.deps.repos.widgets.create({ ...acme.widget, id: newId("wd", w.clock), name: "Spare" });
  const operator = await w.deps.operatorKeys.create();
  const agentToken = await anonymousAgentToken(w.app, HOST);

  /** A valid value of a path or required query parameter, by name. */
  const param = (name: string, template: string): string => {
    if (/^(data_model_id|dm_id)$/.test(name)) return acme.dmNews;
    if (/^(ai_model_id|aimodel_external_id|id)$/.test(name)) {
      return template.startsWith("/v1/widgets/") ? spareWidget.id : acme.model.id;
    }
    if (name === "wd") return acme.widget.id;
    if (name === "planId") return plan!.id;
    return "x";
  };
  /** Sends `probe` as its caller would: signed on the payproxy routes. */
  const send = async (probe: Probe): Promise<Response> => {
    let headers = probe.headers;
    if (/^\/(payproxy|zeroclick)\//.test(probe.path)) {
      const signed = await signedInit({
        secret: secret.secret,
        kid: secret.kid,
        clock: w.clock,
        url: probe.path,
        body: probe.body ?? "",
        agentId: "agent-fuzz",
        method: probe.method,
      });
      headers = { ...headers, ...(signed.headers as Record<string, string>) };
    }
    // A GET carries no body, whatever a document says (GET /mcp shares POST's description).
    const body = probe.method === "GET" ? undefined : probe.body;
    return await w.app.request(`${HOST}${probe.path}`, { method: probe.method, headers, body });
  };
  const close = async () => {
    await w.close();
    await peer.close();
  };
  /** The bodies the document describes only in prose, by operation: the code's own item schemas. */
  const itemBodies: Record<string, ItemBody> = {
    "POST /v1/events": {
      schema: z.toJSONSchema(eventInputSchema, { io: "input", unrepresentable: "any" }),
      item: { event_type: "query", prompt: "What did the council decide?", session_id: "fuzz-session" },
      wrap: (item) => ({ widget_id: acme.widget.id, events: [item] }),
    },
    "POST /v1/data-models/{data_model_id}/articles": {
      schema: z.toJSONSchema(articleInputSchema, { io: "input", unrepresentable: "any" }),
      item: { url: "https://news.example/fuzz", title: "A fuzzed story", body: "The council met on Monday." },
      wrap: (item) => [item],
    },
  };
  /** The credential a caller of `template` holds: the operator's, an agent's or the tenant's key. */
  const credential = (template: string, op: Operation): string => {
    if (template === "/payproxy/metrics") return operator.key;
    const schemes = (op.security ?? []).flatMap((s) => Object.keys(s));
    return schemes.includes("agentToken") && !schemes.includes("bearerAuth") ? agentToken : acme.key;
  };
  return { w, acme, credential, agentToken, itemBodies, param, send, outbound, [Symbol.asyncDispose]: close };
}

/**
 * What is wrong with one answer, or nothing. `jsonRpcId`: the marker is the request's JSON-RPC id,
 * which must come back. `report`: the answer reports on items (ids, statuses, errors) and names
 * none of the caller's text, whatever its status.
 */
async function faultsOf(res: Response, { mcp = false, jsonRpcId = false, report = false } = {}): Promise<string[]> {
  const text = await res.text();
  const faults: string[] = [];
  const type = res.headers.get("content-type") ?? "";
  if (res.status >= 500) faults.push(`answered ${res.status}`);
  if (!res.headers.get("x-request-id")) faults.push("no X-Request-Id");
  for (const [name, value] of res.headers) {
    if (echoesMarker(value)) faults.push(`the input in the ${name} header (${res.status})`);
  }
  // A success may name what was asked (a search's query, the filters echoed); an error never does.
  const isError = res.status >= 400 || report || (mcp && /"isError":true|"error":\{/.test(text));
  if (isError && !jsonRpcId && echoesMarker(text)) faults.push(`echoed the input (${res.status})`);
  if (/json|text\/plain/.test(type) && LIBRARY_TEXT.test(text)) faults.push(`library text (${res.status})`);
  // A page may show what was asked, escaped; the marker's `<script>` as markup would be script injection.
  if (/html/.test(type) && text.includes(MARKER)) faults.push(`the input as markup in a page (${res.status})`);
  // A caller's input is never our internal error: JSON-RPC -32603 is the MCP twin of a 500.
  if (mcp && /"code":-32603\b/.test(text)) faults.push("JSON-RPC -32603 (internal error)");
  if (/json/.test(type) && text !== "") {
    // NDJSON (the dashboard's panels) is a JSON text a line.
    const texts = /ndjson/.test(type) ? text.split("\n").filter((line) => line !== "") : [text];
    try {
      for (const t of texts) JSON.parse(t);
    } catch {
      faults.push(`a JSON body that does not parse (${res.status})`);
    }
  }
  return faults;
}

Deno.test("every operation in /openapi.json answers hostile input without a 5xx, an echo in an error or library text", async (t) => {
  await using f = await fuzzWorld();
  const doc = await (await f.w.app.request("/openapi.json")).json();
  const schemas = doc.components?.schemas ?? {};
  const pastTheGate = new Map<string, boolean>();
  let sent = 0;
  for (const [template, operations] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
    for (const [verb, op] of Object.entries(operations)) {
      const method = verb.toUpperCase();
      const name = `${method} ${template}`;
      await t.step(name, async () => {
        const headers = {
          authorization: `Bearer ${f.credential(template, op)}`,
          origin: ORIGIN,
          accept: "application/json, text/event-stream",
        };
        const faults: string[] = [];
        let passed = false;
        const items = f.itemBodies[name];
        for (const probe of probesOf(method, template, op, schemas, { param: f.param, headers, items })) {
          if (name in TWINS && !/^(as documented|body )/.test(probe.label)) continue;
          sent++;
          const res = await f.send(probe);
          passed ||= !GATE_STATUSES.has(res.status) && res.status !== 413;
          const report = probe.label.startsWith("item ");
          for (const fault of await faultsOf(res, { report, mcp: template === "/mcp" })) {
            faults.push(`${probe.label}: ${fault}`);
          }
        }
        pastTheGate.set(name, passed);
        assert.deepEqual(faults, [], name);
      });
    }
  }

  for (const [caller, credential] of [["a tenant's key", f.acme.key], ["an agent's token", f.agentToken]] as const) {
    await t.step(`MCP tools/call with ${caller}: each argument of each tool`, async () => {
      const rpc = (body: unknown): Probe => ({
        label: "",
        method: "POST",
        path: "/mcp",
        headers: {
          authorization: `Bearer ${credential}`,
          accept: "application/json, text/event-stream",
          "content-type": "application/json",
        },
        body: JSON.stringify(body),
      });
      const listed = await (await f.send(rpc({ jsonrpc: "2.0", id: 1, method: "tools/list" }))).json();
      const tools = listed.result.tools as { name: string; inputSchema: Schema }[];
      assert.ok(tools.length >= 5, "the tools are listed");
      const faults: string[] = [];
      for (const tool of tools) {
        const properties = tool.inputSchema.properties ?? {};
        const base: Record<string, unknown> = Object.fromEntries(
          (tool.inputSchema.required ?? []).map((k: string) => [k, sampleOf(properties[k], {})]),
        );
        if ("data_model_id" in properties) base.data_model_id = f.acme.dmNews;
        if ("ai_model_id" in properties) base.ai_model_id = f.acme.model.id;
        const calls = [
          ...Object.entries<Schema>(properties).flatMap(([k, schema]) =>
            valuesFor(schema, {}).map((v) => ({ ...base, [k]: v }))
          ),
          null,
          [],
          MARKER,
        ];
        for (const args of calls) {
          sent++;
          const res = await f.send(
            rpc({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: tool.name, arguments: args } }),
          );
          for (const fault of await faultsOf(res, { mcp: true })) {
            faults.push(`${tool.name} ${JSON.stringify(args).slice(0, 60)}: ${fault}`);
          }
        }
      }
      for (
        const body of [{ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: MARKER } }, {
          jsonrpc: "1.0",
          id: 4,
          method: "tools/list",
        }]
      ) {
        for (const fault of await faultsOf(await f.send(rpc(body)), { mcp: true })) {
          faults.push(`${JSON.stringify(body)}: ${fault}`);
        }
      }
      // JSON-RPC answers with the request's id, whatever it is: the one echo the protocol asks for.
      const unknownMethod = await f.send(rpc({ jsonrpc: "2.0", id: MARKER, method: MARKER }));
      const rpcFaults = await faultsOf(unknownMethod, { mcp: true, jsonRpcId: true });
      assert.deepEqual([...faults, ...rpcFaults], []);
    });
  }

  await t.step(
    "over real HTTP: each body operation takes the whole hostile bodies as a client sends them",
    async () => {
      const server = startServer(f.w.app.fetch);
      try {
        const faults: string[] = [];
        for (const [template, operations] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
          for (const [verb, op] of Object.entries(operations)) {
            const method = verb.toUpperCase();
            const name = `${method} ${template}`;
            if (method === "GET" || !op.requestBody || name in TWINS) continue;
            const headers = {
              authorization: `Bearer ${f.credential(template, op)}`,
              origin: ORIGIN,
              accept: "application/json, text/event-stream",
              "content-type": Object.keys(op.requestBody.content)[0]!,
            };
            const path = template.replace(/\{(\w+)\}/g, (_, p) => f.param(p, template));
            for (const body of HOSTILE_BODIES) {
              sent++;
              const res = await fetch(`${server.url}${path}`, { method, headers, body });
              for (const fault of await faultsOf(res)) faults.push(`${name} body ${body.slice(0, 12)}: ${fault}`);
            }
          }
        }
        assert.deepEqual(faults, []);
      } finally {
        await server.shutdown(1000);
      }
    },
  );

  await t.step("the walk got past every gate it can pass", () => {
    const stoppedAtGate = [...pastTheGate].filter(([name, passed]) => !passed && !(name in GATE_ONLY)).map(([n]) => n);
    assert.deepEqual(stoppedAtGate, [], "these operations only ever answered 401/403/404/405/406/413/429");
    for (const name of Object.keys(GATE_ONLY)) assert.ok(pastTheGate.has(name), `${name} is still documented`);
    for (const [twin, of] of Object.entries(TWINS)) assert.ok(pastTheGate.has(twin) && pastTheGate.has(of), twin);
    assert.ok(sent > 5000, `${sent} requests`);
  });

  await t.step("nothing reached for the network", () => {
    assert.deepEqual(f.outbound, []);
  });
});
