/**
 * The error catalogs (issue 30 item 3): every room declares its errors once, with a unique name, a
 * kind and a sentence-case public message; and core builds no error inline outside its catalogs.
 * Catalogs are found on disk (every `errors.ts` and `*_errors.ts` under core/ and analytics/), so
 * a new room's catalog is checked without being listed here.
 */
import assert from "node:assert/strict";
import { AppError, catalogDeclarations, type ErrorDeclaration } from "../../core/errors.ts";
import { KIND_STATUS } from "../../routes/error_status.ts";
import { httpStatus } from "../../routes/error_status.ts";

const ROOT = new URL("../../", import.meta.url);

/**
 * Rooms that still build errors inline while their catalogs are written on other branches. The
 * coordinator empties this list once they are merged. (core/links builds none today.)
 */
const PENDING_ROOMS: string[] = [];

/**
 * Messages that start with a lower-case word which is not a field name (room/name), kept exactly
 * as they are on the wire: this issue must not change bodies; sentence-casing them is a wire
 * change for another one.
 */
const PINNED_LOWER_CASE = new Set([
  "answer/schema_mismatch", // "model output did not match the schema: ..." (docs/api/answers.md)
  "answer/schema_invalid", // "the model's output schema is not usable: ..."
  "sources/source_check_busy", // "the source could not be checked now, try again shortly"
  "sources/source_not_found", // "source not found"
  "sources/source_limit_reached", // "a data model has at most N sources; delete one first"
  "analytics/range_too_long", // "date range must not exceed 365 days"
  "analytics/exports_busy", // spec 7.2's 429 body: "rate limit exceeded"
  "commerce/checkout_not_boolean", // a field name (or the spec's wording) comes first
  "commerce/plan_id_not_string", // a field name (or the spec's wording) comes first
  "commerce/amount_required", // a field name (or the spec's wording) comes first
  "commerce/amount_not_string", // a field name (or the spec's wording) comes first
  "commerce/amount_malformed", // a field name (or the spec's wording) comes first
  "commerce/amount_not_cent_increment", // a field name (or the spec's wording) comes first
  "commerce/amount_below_minimum", // a field name (or the spec's wording) comes first
  "commerce/amount_above_maximum", // a field name (or the spec's wording) comes first
  "commerce/amount_below_card_minimum", // a field name (or the spec's wording) comes first
  "commerce/payment_amount_mismatch", // a field name (or the spec's wording) comes first
  "commerce/request_id_malformed", // a field name (or the spec's wording) comes first
  "commerce/request_id_reused", // a field name (or the spec's wording) comes first
  "commerce/allowance_agent_mismatch", // a field name (or the spec's wording) comes first
  "payproxy/invalid_model_id", // a field name (or the spec's wording) comes first
  "search/too_many_items", // "articles: at most N per call" (the field it names comes first)
  "identity/redirect_uri_empty", // "each redirect URI must be a non-empty string"
  "identity/redirect_uri_too_long", // "a redirect URI is longer than 2000 characters", and so on
  "identity/redirect_uri_not_absolute",
  "identity/redirect_uri_fragment",
  "identity/redirect_uri_credentials",
  "identity/redirect_uri_http_not_loopback",
  "identity/redirect_uri_scheme",
]);

async function* tsFiles(dir: URL): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const url = new URL(e.name + (e.isDirectory ? "/" : ""), dir);
    if (e.isDirectory) yield* tsFiles(url);
    else if (e.name.endsWith(".ts")) yield url.pathname.slice(ROOT.pathname.length);
  }
}

const isCatalogFile = (path: string) => /(^|\/|_)errors\.ts$/.test(path);

/** The room of a file: `core/identity/oauth.ts` -> identity, `core/clock.ts` -> core, `analytics/x.ts` -> analytics. */
function roomOf(path: string): string {
  const parts = path.split("/");
  if (parts[0] === "core") return parts.length > 2 ? parts[1]! : "core";
  return parts[0]!;
}

async function sourceFiles(): Promise<string[]> {
  const files: string[] = [];
  for (const top of ["core/", "analytics/"]) {
    for await (const f of tsFiles(new URL(top, ROOT))) files.push(f);
  }
  return files.sort();
}

interface Declared {
  room: string;
  file: string;
  name: string;
  declaration: ErrorDeclaration;
  raise: (...args: unknown[]) => unknown;
}

async function declaredErrors(): Promise<Declared[]> {
  const out: Declared[] = [];
  for (const file of (await sourceFiles()).filter(isCatalogFile)) {
    const mod = await import(new URL(file, ROOT).href);
    for (const value of Object.values(mod)) {
      const declarations = catalogDeclarations(value);
      if (!declarations) continue;
      for (const [name, declaration] of Object.entries(declarations)) {
        const raise = (value as Record<string, (...args: unknown[]) => unknown>)[name]!;
        out.push({ room: roomOf(file), file, name, declaration, raise });
      }
    }
  }
  return out;
}

/**
 * A stand-in for any parameter: a string ("Sample") in a template, 1 as a number, and itself for
 * any property or call, so a message function can be evaluated without knowing its parameters.
 */
// deno-lint-ignore no-explicit-any
function sample(): any {
  return new Proxy(function () {}, {
    get(_t, key) {
      if (key === Symbol.toPrimitive) return (hint: string) => hint === "number" ? 1 : "Sample";
      if (key === "toString" || key === "valueOf") return () => "Sample";
      if (key === Symbol.iterator) {
        return function* () {
          yield "Sample";
        };
      }
      if (key === "length") return 1;
      return sample();
    },
    apply: () => sample(),
  });
}

/** The declared message; a function is called with {@link sample} parameters. */
const messageOf = (d: ErrorDeclaration): string =>
  typeof d.message === "function" ? String(d.message(sample())) : d.message;

/** A sentence-case message: a capital (or a digit or sign), or a field name such as `login_hint`, `url`. */
function sentenceCaseProblem(message: string): string | null {
  if (message !== message.trim()) return "has leading or trailing space";
  if (message.endsWith(".") && !message.endsWith("...")) return "ends with a period";
  const first = message.split(/[\s:]/)[0]!;
  if (!/^[a-z]/.test(first)) return null;
  // A field or parameter name: snake_case, dotted, indexed, or one of the plain field names.
  if (/[_.[]/.test(first) || FIELD_NAMES.has(first)) return null;
  return `starts with the lower-case word "${first}"`;
}

/** Field and parameter names of one plain word that messages start with. */
const FIELD_NAMES = new Set(["url", "state", "code", "resource", "format", "compare", "timezone", "interval", "query"]);

Deno.test("error catalogs: every declared error has a unique (room, name), a kind and a sentence-case message without a trailing period", async () => {
  const declared = await declaredErrors();
  // The rooms converted on this branch all have catalogs.
  const rooms = new Set(declared.map((d) => d.room));
  for (const room of ["core", "identity", "answer", "sources", "widget", "auth", "analytics"]) {
    assert.ok(rooms.has(room), `no catalog found for ${room}`);
  }
  const seen = new Map<string, string>();
  const problems: string[] = [];
  for (const d of declared) {
    const id = `${d.room}/${d.name}`;
    if (seen.has(id)) problems.push(`${id} is declared in ${seen.get(id)} and in ${d.file}`);
    seen.set(id, d.file);
    if (!(d.declaration.kind in KIND_STATUS)) problems.push(`${id} has no known kind`);
    const code = d.declaration.code ?? d.name;
    if (!/^[a-z][a-z0-9_]*$/.test(code)) problems.push(`${id} has the code ${JSON.stringify(code)}`);
    const message = messageOf(d.declaration);
    if (typeof message !== "string" || message.length === 0) {
      problems.push(`${id} has no message`);
      continue;
    }
    const problem = sentenceCaseProblem(message);
    if (problem && !(PINNED_LOWER_CASE.has(id) && !message.endsWith("."))) {
      problems.push(`${id}: the message ${problem}: ${JSON.stringify(message)}`);
    }
    // The raiser builds the declared error: status from the kind, code as declared.
    const err = typeof d.declaration.message === "function" ? d.raise(sample()) : d.raise();
    assert.ok(err instanceof AppError, id);
    assert.equal(httpStatus(err), KIND_STATUS[d.declaration.kind], id);
    assert.equal(err.code, code, id);
    // `detail: true` repeats the message; a string is a declared note of its own.
    const detail = d.declaration.detail;
    if (detail) assert.equal(err.detail, typeof detail === "string" ? detail : err.message, id);
  }
  assert.deepEqual(problems, []);
});

Deno.test("error catalogs: PINNED_LOWER_CASE names only declared errors that need it", async () => {
  const declared = new Map((await declaredErrors()).map((d) => [`${d.room}/${d.name}`, d]));
  for (const id of PINNED_LOWER_CASE) {
    const d = declared.get(id);
    assert.ok(d, `${id} is not declared`);
    const message = messageOf(d.declaration);
    assert.ok(sentenceCaseProblem(message), `${id} is sentence case: drop it from the list`);
  }
});

Deno.test("core and analytics build no error inline outside their catalogs (pending rooms listed)", async () => {
  // An AppError built by hand (numeric status or not), or an edge helper with an inline message.
  const inline = /\bnew AppError\(|(?<![\w.])(?:sfError|badRequest|unauthorized|forbidden|notFound|unprocessable)\(/;
  const offenders: string[] = [];
  const pendingSeen = new Set<string>();
  for (const file of await sourceFiles()) {
    if (isCatalogFile(file)) continue;
    const text = await Deno.readTextFile(new URL(file, ROOT));
    const lines = text.split("\n");
    lines.forEach((line, i) => {
      if (/^\s*(\/\/|\*|\/\*)/.test(line) || !inline.test(line)) return;
      if (PENDING_ROOMS.includes(roomOf(file))) pendingSeen.add(roomOf(file));
      else offenders.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(offenders, []);
  // A pending room that no longer builds errors inline leaves the list.
  for (const room of PENDING_ROOMS) {
    assert.ok(pendingSeen.has(room), `${room} builds no error inline any more: remove it from PENDING_ROOMS`);
  }
});
