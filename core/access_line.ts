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
  at = putAscii(buffer, at, String(parts.status));
  at = put(buffer, at, DURATION);
  at = putAscii(buffer, at, String(parts.durationMs));
  at = put(buffer, at, TENANT);
  at = parts.tenant === null ? put(buffer, at, NULL) : putJsonString(buffer, at, parts.tenant);
  at = put(buffer, at, CALLER);
  at = parts.caller === null ? put(buffer, at, NULL) : putJsonString(buffer, at, parts.caller);
  at = put(buffer, at, REQUEST_ID);
  at = putJsonString(buffer, at, parts.requestId);
  return put(buffer, at, END);
}

function put(buffer: Uint8Array, at: number, part: Uint8Array): number {
  buffer.set(part, at);
  return at + part.length;
}

/** Text known to be printable ASCII (a stamp, a number). */
function putAscii(buffer: Uint8Array, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) buffer[at + i] = text.charCodeAt(i);
  return at + text.length;
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
