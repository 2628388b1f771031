/**
 * The access-log line written straight into a byte buffer (core/log_buffer.ts `writeBytes`): the
 * same bytes as the line built as a string and encoded (core/log.ts pins that), without the string,
 * its flattening and its encoding, about half a microsecond of a 10 µs request over HTTP
 * (bench/RESULTS.md, "Fixed cost of a request, third pass").
 */

const encoder = new TextEncoder();
const bytes = (text: string) => encoder.encode(text);
const TS = bytes('{"ts":"');
const METHOD = bytes(',"level":"info","msg":"request","method":');
const PATH = bytes(',"path":');
const STATUS = bytes(',"status":');
const DURATION = bytes(',"duration_ms":');
const TENANT = bytes(',"tenant":');
const CALLER = bytes(',"caller":');
const REQUEST_ID = bytes(',"request_id":');
const END = bytes("}\n");
const NULL = bytes("null");

/** The fields of one line, strings already redacted; `null` where the line writes null. */
export interface AccessLineParts {
  stamp: string;
  method: string;
  path: string;
  status: number;
  durationMs: number;
  tenant: string | null;
  caller: string | null;
  requestId: string;
}

// Everything but the five free strings: the constant parts, the stamp and two numbers.
const FIXED_BYTES = 256;

/**
 * The most bytes {@link writeAccessLine} writes for `parts`: a UTF-16 unit becomes at most 6 bytes
 * (`\u001f`, or a lone surrogate escaped; a character outside ASCII is at most 3 bytes a unit).
 */
export function accessLineMaxBytes(parts: AccessLineParts): number {
  return FIXED_BYTES +
    6 * (parts.method.length + parts.path.length + (parts.tenant?.length ?? 0) + (parts.caller?.length ?? 0) +
        parts.requestId.length);
}

/** Writes the line and its newline at `at`; returns where it stopped. */
export function writeAccessLine(buffer: Uint8Array, at: number, parts: AccessLineParts): number {
  at = put(buffer, at, TS);
  at = putAscii(buffer, at, parts.stamp);
  buffer[at++] = 0x22;
  at = put(buffer, at, METHOD);
  at = putJsonString(buffer, at, parts.method);
  at = put(buffer, at, PATH);
  at = putJsonString(buffer, at, parts.path);
  at = put(buffer, at, STATUS);
  at = putNumber(buffer, at, parts.status);
  at = put(buffer, at, DURATION);
  at = putNumber(buffer, at, parts.durationMs);
  at = put(buffer, at, TENANT);
  at = parts.tenant === null ? put(buffer, at, NULL) : putJsonString(buffer, at, parts.tenant);
  at = put(buffer, at, CALLER);
  at = parts.caller === null ? put(buffer, at, NULL) : putJsonString(buffer, at, parts.caller);
  at = put(buffer, at, REQUEST_ID);
  at = putJsonString(buffer, at, parts.requestId);
  return put(buffer, at, END);
}

// Byte by byte: the parts are a few dozen bytes, where `TypedArray.prototype.set`'s call costs more
// than the copy.
function put(buffer: Uint8Array, at: number, part: Uint8Array): number {
  for (let i = 0; i < part.length; i++) buffer[at + i] = part[i]!;
  return at + part.length;
}

/** Text known to be printable ASCII (a stamp, a number). */
function putAscii(buffer: Uint8Array, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) buffer[at + i] = text.charCodeAt(i);
  return at + text.length;
}

/**
 * A finite number as JSON writes it. Whole numbers and numbers of at most two decimals (a status,
 * a duration rounded to 0.01 ms) are written digit by digit; any other goes through `String()`.
 * For such a number the digits of `cents / 100` with trailing zeros dropped are its shortest
 * round-trip form, which is what `String()` writes, as long as it is far below 2^53 / 100.
 */
function putNumber(buffer: Uint8Array, at: number, value: number): number {
  const cents = Math.round(value * 100);
  if (!(value >= 0 && value < 1e12 && cents / 100 === value)) return putAscii(buffer, at, String(value));
  let whole = Math.floor(cents / 100);
  const fraction = cents - whole * 100;
  // The whole part's digits, backwards into place.
  let digits = 1;
  for (let rest = whole; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  for (let i = digits - 1; i >= 0; i--) {
    buffer[at + i] = 0x30 + (whole % 10);
    whole = Math.floor(whole / 10);
  }
  at += digits;
  if (fraction === 0) return at;
  buffer[at++] = 0x2e;
  buffer[at++] = 0x30 + Math.floor(fraction / 10);
  if (fraction % 10 !== 0) buffer[at++] = 0x30 + (fraction % 10);
  return at;
}

/**
 * `JSON.stringify(text)` as UTF-8: copied a unit a byte while the text is printable ASCII without
 * `"` or `\`, which JSON writes as they are; anything else goes through JSON.stringify.
 */
function putJsonString(buffer: Uint8Array, at: number, text: string): number {
  const n = text.length;
  buffer[at] = 0x22;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
      return at + encoder.encodeInto(JSON.stringify(text), buffer.subarray(at)).written;
    }
    buffer[at + 1 + i] = c;
  }
  buffer[at + 1 + n] = 0x22;
  return at + n + 2;
}
