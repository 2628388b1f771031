import { accessLineMaxBytes, type AccessLineParts, writeAccessLine } from "./access_line.ts";

/** Severity levels, lowest first. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Structured logger: one JSON object a line. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A request's access-log line: the bytes `info("request", {...})` writes of the same fields. */
  request(line: AccessLine): void;
}

/** The fields of an access-log line, in their order in the line. */
export interface AccessLine {
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  tenant: string | null;
  caller: string | null;
  request_id: string;
}

// Field names whose values are credentials: never written, whatever their content.
const SECRET_FIELD = /authorization|secret|password|passwd|token|api_?key|cookie|assertion|credential/i;
// Credential shapes that might ride inside free text (an error message, a URL).
const SECRET_TEXT: ((text: string) => string)[] = [
  (text) => text.replace(/\bak_[A-Za-z0-9_-]{8,}/g, "ak_[redacted]"),
  (text) => text.replace(/\b(Bearer|Payment|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, "$1 [redacted]"),
  redactJwts,
  (text) => text.replace(/([?&](?:key|token|api_key|access_token|secret)=)[^&\s]+/gi, "$1[redacted]"),
  // Paths that are themselves capabilities: a claim link (who holds it sees the human's e-mail and can
  // lock the link with wrong codes), a checkout or payment reference (who holds it can cancel the
  // checkout). Their secret parts are 43 characters; `/claim/complete` and the like stay readable.
  (text) => text.replace(/\/(claim|checkout|payments)\/[A-Za-z0-9_-]{16,}/g, "/$1/[redacted]"),
  // A human's e-mail address (personal data): a mail relay's refusal quotes the recipient.
  redactEmails,
];

// Text none of SECRET_TEXT can match (most log text: paths and ids) skips the scans. Each pattern
// needs one of these: `ak_`, `eyJ`, `?` or `&`, the white space after a scheme's name
// (case-sensitive, so cheaper than naming the schemes in any case), a capability path's prefix or
// an `@`.
const MAY_HOLD_SECRET = /ak_|eyJ|[?&\s@]|\/(?:claim|checkout|payments)\//;

/** Removes credentials from a free-text string. */
export function redactText(text: string): string {
  if (!MAY_HOLD_SECRET.test(text)) return text;
  let out = text;
  for (const redact of SECRET_TEXT) out = redact(out);
  return out;
}

const JWT_START = /\beyJ/g;
const JWT_AT = /eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/y;
const TOKEN_RUN = /[A-Za-z0-9_-]*/y;

/**
 * Replaces what `/\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\/g` matches, in linear time.
 * That pattern alone was quadratic: `-` makes a word boundary, so in a path of 64 KB of `eyJ-`
 * every `eyJ` was a start that scanned to the end of the run (1.2 s a request). A start that fails
 * fails for every later `eyJ` of its run (all reach the same first `.`), so the search skips the run.
 */
function redactJwts(text: string): string {
  if (!text.includes("eyJ")) return text;
  let out = "", from = 0;
  JWT_START.lastIndex = 0;
  for (let start = JWT_START.exec(text); start; start = JWT_START.exec(text)) {
    JWT_AT.lastIndex = start.index;
    if (JWT_AT.test(text)) {
      out += `${text.slice(from, start.index)}[jwt redacted]`;
      from = JWT_START.lastIndex = JWT_AT.lastIndex;
    } else {
      TOKEN_RUN.lastIndex = start.index;
      TOKEN_RUN.test(text);
      JWT_START.lastIndex = TOKEN_RUN.lastIndex;
    }
  }
  return from === 0 ? text : out + text.slice(from);
}

// An e-mail address's parts, read outward from its `@` with bounded runs: a pattern that starts
// anywhere (`[...]+@`) retries at every character of a long run without an `@` after it, quadratic
// in a 64 KB request path (tests/security/log_redaction_stall_test.ts).
const LOCAL_PART_CHAR = /[A-Za-z0-9._%+-]/;
const DOMAIN_AT = /[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/y;
const MAX_LOCAL_PART = 64;
const MAX_DOMAIN = 255;

/** Replaces each e-mail address in `text` with `[e-mail redacted]`, in one pass. */
function redactEmails(text: string): string {
  let out = "", from = 0;
  for (let at = text.indexOf("@"); at !== -1; at = text.indexOf("@", at + 1)) {
    let start = at;
    while (start > from && at - start < MAX_LOCAL_PART && LOCAL_PART_CHAR.test(text[start - 1]!)) start--;
    if (start === at) continue;
    const domain = text.slice(at + 1, at + 1 + MAX_DOMAIN);
    DOMAIN_AT.lastIndex = 0;
    if (!DOMAIN_AT.test(domain)) continue;
    out += `${text.slice(from, start)}[e-mail redacted]`;
    from = at + 1 + DOMAIN_AT.lastIndex;
    at = from - 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

// Field names repeat (every access-log line has the same seven): each name is looked at once, for
// whether it names a secret and how it is written in a line. Bounded, as the names come from code,
// but capped in case one ever comes from data.
interface FieldName {
  secret: boolean;
  /** `"name":`, or null for a name a hand-built line cannot place where JSON.stringify would. */
  json: string | null;
}
const fieldNames = new Map<string, FieldName>();
function fieldName(name: string): FieldName {
  let known = fieldNames.get(name);
  if (known === undefined) {
    // An array-index name goes first in an object's JSON; ts, level and msg keep their place up
    // front when a field overrides them; `__proto__` is no field of a plain object at all.
    const placed = !/^(?:\d+|ts|level|msg|__proto__)$/.test(name);
    known = { secret: SECRET_FIELD.test(name), json: placed ? `${JSON.stringify(name)}:` : null };
    if (fieldNames.size < 1000) fieldNames.set(name, known);
  }
  return known;
}
function isSecretName(name: string): boolean {
  return fieldName(name).secret;
}

/** Deep-copies log fields with secrets removed. */
export function redactFields(fields: Record<string, unknown>): Record<string, unknown> {
  return redactInto({}, fields);
}

/** Copies `fields` into `out` with secrets removed; returns `out`. */
function redactInto(out: Record<string, unknown>, fields: Record<string, unknown>): Record<string, unknown> {
  for (const k in fields) {
    const v = fields[k];
    if (isSecretName(k) && v !== undefined && v !== null && typeof v !== "boolean" && typeof v !== "number") {
      out[k] = "[redacted]";
    } else if (typeof v === "string") out[k] = redactText(v);
    else if (v && typeof v === "object" && !Array.isArray(v)) out[k] = redactFields(v as Record<string, unknown>);
    else out[k] = v;
  }
  return out;
}

/**
 * A JSON-lines logger writing to `write` (stdout by default), dropping lines below `level`.
 * Every line is redacted as {@link redactFields} does.
 */
export function createLogger(
  { level = "info", write = (line: string) => console.log(line), clock, nowMs, lines }: {
    level?: LogLevel;
    write?: (line: string) => void;
    /** Stamps each line; main.ts passes the wall clock, tests a fixed one. */
    clock: () => Date;
    /** The clock's time in milliseconds, when it can be read without making a Date (`Date.now`). */
    nowMs?: () => number;
    /**
     * Where `write` puts its lines, when it can take one written straight into its buffer
     * (core/log_buffer.ts): access lines then skip being built as strings.
     */
    lines?: ByteLines;
  },
): Logger {
  const min = LOG_LEVELS.indexOf(level);
  // Formatting a date costs about a microsecond; lines of the same millisecond share one stamp.
  let stampedMs = NaN;
  let stamp = "";
  const stampNow = (): string => {
    const ms = nowMs ? nowMs() : clock().getTime();
    if (ms !== stampedMs) {
      stampedMs = ms;
      stamp = new Date(ms).toISOString();
    }
    return stamp;
  };
  const emit = (lvl: LogLevel) =>
    LOG_LEVELS.indexOf(lvl) < min ? () => {} : (msg: string, fields?: Record<string, unknown>) => {
      const stamp = stampNow();
      const head = `{"ts":"${stamp}","level":"${lvl}","msg":${JSON.stringify(redactText(msg))}`;
      write(fields ? withFields(head, lvl, stamp, msg, fields) : head + "}");
    };
  const info = emit("info");
  // One line a request: no fields object and no per-field checks (none of these names is a
  // secret's; every string is still redacted), and with `lines`, no string at all.
  const parts: AccessLineParts = {
    stamp: "",
    method: "",
    path: "",
    status: 0,
    durationMs: 0,
    tenant: null,
    caller: null,
    requestId: "",
  };
  const request = LOG_LEVELS.indexOf("info") < min ? () => {} : (a: AccessLine) => {
    if (!Number.isFinite(a.status) || !Number.isFinite(a.duration_ms)) return info("request", { ...a });
    parts.stamp = stampNow();
    parts.method = METHOD_SAFE[a.method] ? a.method : redactText(a.method);
    parts.path = redactText(a.path);
    parts.status = a.status;
    parts.durationMs = a.duration_ms;
    parts.tenant = a.tenant === null ? null : redactText(a.tenant);
    parts.caller = a.caller === null ? null : redactText(a.caller);
    parts.requestId = redactText(a.request_id);
    if (lines?.writeBytes(accessLineMaxBytes(parts), writeAccessLine, parts)) return;
    write(accessLineText(parts));
  };
  return { debug: emit("debug"), info, warn: emit("warn"), error: emit("error"), request };
}

/** Takes lines written straight into its buffer (core/log_buffer.ts `LineBuffer`). */
export interface ByteLines {
  writeBytes<T>(maxBytes: number, writeInto: (buffer: Uint8Array, at: number, item: T) => number, item: T): boolean;
}

// The methods most requests use: no secret pattern can match them.
const METHOD_SAFE: Record<string, true | undefined> = Object.assign(
  Object.create(null),
  Object.fromEntries(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].map((m) => [m, true])),
);

/** The access line as a string (no byte buffer to write it into): the text of the same bytes. */
function accessLineText(parts: AccessLineParts): string {
  const bytes = new Uint8Array(accessLineMaxBytes(parts));
  // Without its newline.
  return lineDecoder.decode(bytes.subarray(0, writeAccessLine(bytes, 0, parts) - 1));
}
const lineDecoder = new TextDecoder();

/**
 * A line's fields written after `head` by hand: the bytes JSON.stringify makes of the redacted line
 * object, without building that object (most lines hold only strings, numbers, booleans and null).
 * A field of any other kind, or a name that changes the order, falls back to the object.
 */
function withFields(
  head: string,
  level: LogLevel,
  stamp: string,
  msg: string,
  fields: Record<string, unknown>,
): string {
  let line = head;
  for (const k in fields) {
    const name = fieldName(k);
    if (name.json === null) return objectLine(level, stamp, msg, fields);
    const v = fields[k];
    if (v === undefined) continue;
    if (name.secret && v !== null && typeof v !== "boolean" && typeof v !== "number") {
      line += `,${name.json}"[redacted]"`;
    } else if (typeof v === "string") line += `,${name.json}${JSON.stringify(redactText(v))}`;
    else if (typeof v === "number" || typeof v === "boolean" || v === null) line += `,${name.json}${JSON.stringify(v)}`;
    else return objectLine(level, stamp, msg, fields);
  }
  return line + "}";
}

/** The line as one object (fields may override ts, level and msg, as a spread after them did). */
function objectLine(level: LogLevel, stamp: string, msg: string, fields: Record<string, unknown>): string {
  return JSON.stringify(redactInto({ ts: stamp, level, msg: redactText(msg) }, fields));
}

/** A logger that keeps its lines in memory; for tests. */
export function memoryLogger(
  clock: () => Date = () => new Date(0),
): Logger & { lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: "debug", write: (line) => lines.push(JSON.parse(line)), clock });
  return Object.assign(logger, { lines });
}

/** The safe description of an unexpected error for a log line: name and redacted message, no stack. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return redactText(`${err.name}: ${err.message}`);
  return redactText(String(err));
}
