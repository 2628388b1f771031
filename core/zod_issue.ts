/**
 * A zod issue in our words, for public error messages. A schema's own message (`error: "must be
 * dm_ followed by ..."`, a refinement's text) is kept; zod's default English is replaced, because it
 * is a library's text and one of its forms quotes the caller's input (`Unrecognized key: "<key>"`).
 */
import { z } from "zod";

type Issue = z.core.$ZodIssue;

/** zod's English messages (what an issue's message is when the schema set none), made on first use. */
let english: ((issue: never) => unknown) | undefined;
const zodEnglish = () => english ??= z.locales.en().localeError as (issue: never) => unknown;

/** How an expected type is said. */
const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  bigint: "an integer",
  boolean: "true or false",
  object: "an object",
  record: "an object",
  array: "an array",
  tuple: "an array",
  date: "a date",
  null: "null",
};

/** How a type zod expected is said (`must be an object`); undefined for a type without a phrase. */
export const expectedTypeName = (expected: string): string | undefined =>
  Object.hasOwn(TYPE_NAMES, expected) ? TYPE_NAMES[expected] : undefined;

/** How a string format is said. */
const FORMAT_NAMES: Readonly<Record<string, string>> = {
  url: "a URL",
  email: "an e-mail address",
  uuid: "a UUID",
  guid: "a UUID",
  datetime: "a date and time (ISO 8601)",
  date: "a date (YYYY-MM-DD)",
  time: "a time (HH:MM:SS)",
  ipv4: "an IPv4 address",
  ipv6: "an IPv6 address",
  base64: "base64 text",
  base64url: "base64url text",
};

/** True when zod wrote the issue's message (no schema set one). */
function isZodDefault(issue: Issue): boolean {
  // zod leaves the input off issues unless asked, so its "received ..." half cannot be rebuilt.
  if (issue.code === "invalid_type") return issue.message.startsWith("Invalid input: expected ");
  const text = zodEnglish()(issue as never);
  return issue.message === (typeof text === "string" ? text : (text as { message?: string })?.message);
}

/** True when the issue is about a value that is not there at all. */
export function isMissing(issue: Issue): boolean {
  if (issue.code !== "invalid_type") return false;
  return "input" in issue ? issue.input === undefined : /received undefined$/.test(issue.message);
}

/** `must be at most 2000 characters`, `must have at least 1 item`, `must be less than 5`. */
function bound(word: "at most" | "at least", limit: unknown, inclusive: boolean | undefined, origin: string): string {
  const n = String(limit);
  if (origin === "string") {
    return n === "1" && word === "at least" ? "must not be empty" : `must be ${word} ${n} characters`;
  }
  if (origin === "array" || origin === "set") {
    return n === "1" && word === "at least" ? "must not be empty" : `must have ${word} ${n} items`;
  }
  if (origin === "file") return `must be ${word} ${n} bytes`;
  if (inclusive === false) return `must be ${word === "at most" ? "less" : "greater"} than ${n}`;
  return `must be ${word} ${n}`;
}

/**
 * The issue's problem in our words, without the field: `must be a number`, `is required`,
 * `must be one of semantic, most_recent`. Never the caller's input.
 */
export function issueText(issue: Issue): string {
  if (isMissing(issue)) return "is required";
  if (!isZodDefault(issue)) return issue.message;
  switch (issue.code) {
    case "invalid_type":
      return `must be ${expectedTypeName(issue.expected) ?? "of another type"}`;
    case "too_big":
      return bound("at most", issue.maximum, issue.inclusive, issue.origin);
    case "too_small":
      return bound("at least", issue.minimum, issue.inclusive, issue.origin);
    case "invalid_value":
      return issue.values.length === 1
        ? `must be ${String(issue.values[0])}`
        : `must be one of ${issue.values.map(String).join(", ")}`;
    case "invalid_format":
      return `must be ${FORMAT_NAMES[issue.format] ?? "in the expected format"}`;
    case "not_multiple_of":
      return `must be a multiple of ${String(issue.divisor)}`;
    case "unrecognized_keys":
      // Never the keys themselves: they are the caller's text.
      return "has a field it does not take";
    case "invalid_key":
      return "has a key that is not valid";
    case "invalid_element":
      return "has an element that is not valid";
    default:
      return "is not valid";
  }
}

/** A key of the caller's own (a record's, a bad key) is not named: only names a schema could have. */
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

/** True when `key` is a plain name a schema could have (`sources`, `page_url`), safe to say back. */
export const isSchemaName = (key: string): boolean => SCHEMA_NAME.test(key);

/** The issue's path as `sources.0.url`; a segment that is not a plain name reads `[key]`. */
export function issuePath(issue: Issue): string {
  return issue.path.map((p) => typeof p === "number" || isSchemaName(String(p)) ? String(p) : "[key]").join(".");
}

/** One zod issue as a sentence naming the field: `query: must not be empty`, `body is required`. */
export function describeIssue(issue: Issue): string {
  const field = issuePath(issue);
  if (isMissing(issue)) return `${field || "body"} is required`;
  return field ? `${field}: ${issueText(issue)}` : issueText(issue);
}
