/**
 * JSON-schema validation of structured model output. zod 4's `z.fromJSONSchema` compiles the
 * schema (type, properties, required, items, enum, const, additionalProperties, min/max, pattern,
 * anyOf/oneOf/allOf, $ref to local $defs); compiled validators are cached by schema text.
 */
import { z } from "zod";
import { boundedCache } from "../bounded_cache.ts";
import { isMissing, isSchemaName, issueText } from "../zod_issue.ts";

/** One way a value fails a schema, said twice. */
export interface SchemaProblem {
  /** For a public error: our words, and only the names a schema could have (`sources[0]: must be a string`). */
  text: string;
  /** For the model's repair turn only: zod's own sentence, keys as the output gave them. */
  detail: string;
}

/** A compiled schema: `validate` returns the problems (at most 10), empty when valid. */
export interface SchemaValidator {
  validate(value: unknown): SchemaProblem[];
}

/** Raised when a model's schema cannot be compiled: a configuration mistake, not a caller's. */
export class InvalidSchemaError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "InvalidSchemaError";
  }
}

const cache = boundedCache<string, SchemaValidator>({ max: 256 });

/** `answer.sources[0]`; with `safe`, a key that is not a plain name reads `[key]`. */
function pathOf(issue: z.core.$ZodIssue, safe: boolean): string {
  return issue.path.map((p, i) => {
    if (typeof p === "number") return `[${p}]`;
    const name = safe && !isSchemaName(String(p)) ? "[key]" : String(p);
    return i === 0 ? name : `.${name}`;
  }).join("") || "(root)";
}

/** `answer.sources[0]: must be a string` for the public, zod's `Invalid input: ...` for the model. */
function describe(issue: z.core.$ZodIssue): SchemaProblem {
  const path = pathOf(issue, true);
  const text = isMissing(issue) ? `${path} is required` : `${path}: ${issueText(issue)}`;
  return { text, detail: `${pathOf(issue, false)}: ${issue.message}` };
}

/**
 * Compiles (or returns the cached compilation of) a JSON schema.
 * @throws {InvalidSchemaError} when the schema is not one zod can read.
 */
export function compileSchema(schema: Record<string, unknown>): SchemaValidator {
  const key = JSON.stringify(schema);
  const hit = cache.get(key);
  if (hit) return hit;
  let compiled: z.ZodType;
  try {
    compiled = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (err) {
    // The compiler's message quotes the schema: it stays the cause (logged), never a public message.
    throw new InvalidSchemaError("the model's output schema is not usable", { cause: err });
  }
  const validator: SchemaValidator = {
    validate(value) {
      const r = compiled.safeParse(value);
      return r.success ? [] : r.error.issues.slice(0, 10).map(describe);
    },
  };
  cache.set(key, validator);
  return validator;
}

/**
 * Reads a model's JSON reply: tolerates a Markdown code fence around it (many chat models add
 * one even in JSON mode).
 * @returns the parsed value, or the parse problem as our own sentence: V8's message quotes the
 * reply, so it is never one of the problems (which reach public error messages).
 */
export function parseJsonReply(text: string): { ok: true; value: unknown } | { ok: false; problem: string } {
  let t = text.trim();
  // Read by hand: a lazy pattern retried `\s*```$` at each character of a long run of white space
  // (1.6 s for 40,000 spaces in a reply).
  if (t.length >= 6 && t.startsWith("```") && t.endsWith("```")) {
    const inner = t.slice(3, -3);
    t = (/^json/i.test(inner) ? inner.slice(4) : inner).trim();
  }
  try {
    return { ok: true, value: JSON.parse(t) };
  } catch {
    return { ok: false, problem: "the reply is not valid JSON" };
  }
}
