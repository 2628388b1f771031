import { MAX_JSON_DEPTH } from "./json_depth.ts";

/** Bounds {@link boundPassed} checks a JSON body against, before it is decoded. */
export interface JsonShapeBounds {
  /** The top-level member whose array is counted ... */
  key: string;
  /** ... and the most elements it may have. */
  maxElements: number;
  /** The most values the body may hold, every element and member at any depth (default: no bound). */
  maxValues?: number;
}

/**
 * Which bound a JSON object body passes first, `elements` (its top-level member `key` is an array of
 * more than `maxElements`) or `values` (it holds more than `maxValues` values), or null, by one
 * pass over the bytes that stops as soon as it knows (it does not check the syntax: the parser
 * does). A body a route must refuse for its shape is then refused without being decoded: decoding 8
 * MiB of small elements took about 40 MiB and 0.3 s, for an answer known after the first few
 * kilobytes. The pass gives the event loop a turn after each {@link SLICE_BYTES} (an 8 MiB body of
 * tiny values is a few tens of milliseconds of it). A body nested deeper than {@link MAX_JSON_DEPTH}
 * is left to the decoder, which refuses it for that before parsing.
 */
export async function boundPassed(bytes: Uint8Array, bounds: JsonShapeBounds): Promise<"elements" | "values" | null> {
  const pass = scan(bytes, bounds);
  for (let step = pass.next();; step = pass.next()) {
    if (step.done) return step.value;
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
  }
}

/** Bytes scanned between turns of the event loop (3 to 5 ms of long strings; up to about 25 ms of tiny members). */
export const SLICE_BYTES = 1024 * 1024;

/** {@link boundPassed}'s pass, yielding after each {@link SLICE_BYTES}. */
function* scan(
  bytes: Uint8Array,
  { key, maxElements, maxValues = Infinity }: JsonShapeBounds,
): Generator<void, "elements" | "values" | null> {
  const QUOTE = 0x22, COMMA = 0x2c;
  // The decoder's TextDecoder drops a leading UTF-8 byte-order mark and parses the rest: so does the pass.
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (i < bytes.length && isSpace(bytes[i]!)) i++;
  if (bytes[i] !== 0x7b /* { */) return null;
  let depth = 0;
  // In the top-level object: whether the next string is a member's name, and the last name read.
  let expectName = false;
  let named = false;
  const keyBytes = new TextEncoder().encode(key);
  // In the array counted: whether the next value starts an element, and the elements so far.
  let counting = false;
  let expectElement = false;
  let elements = 0;
  // Values, counted from above: a container and each comma start at most one value each (the
  // body itself is the first container).
  let values = 0;
  let turn = SLICE_BYTES;
  for (; i < bytes.length; i++) {
    if (i >= turn) {
      yield;
      turn = i + SLICE_BYTES;
    }
    const c = bytes[i]!;
    if (isSpace(c)) continue;
    if (counting && depth === 2 && expectElement && c !== 0x5d /* ] */) {
      if (++elements > maxElements) return "elements";
      expectElement = false;
    }
    if (c === QUOTE) {
      const start = i + 1;
      i = yield* closingQuote(bytes, start);
      if (depth === 1 && expectName) {
        named = isName(bytes.subarray(start, i), key, keyBytes);
        expectName = false;
      }
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > MAX_JSON_DEPTH) return null;
      if (++values > maxValues) return "values";
      if (depth === 1) expectName = true;
      else if (depth === 2 && c === 0x5b && named) {
        counting = true;
        expectElement = true;
        elements = 0;
      }
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      if (depth === 2) counting = false;
      depth--;
    } else if (c === COMMA) {
      if (++values > maxValues) return "values";
      if (depth === 1) expectName = true;
      else if (depth === 2 && counting) expectElement = true;
    }
  }
  return null;
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Escaped quotes looked at between turns of the event loop (each is a native search and a look back). */
const SLICE_QUOTES = 64 * 1024;

/**
 * The index of the quote that closes a string opened before `from` (the end when there is none),
 * yielding after each {@link SLICE_BYTES} of it or {@link SLICE_QUOTES} quotes in it: 8 MiB of
 * escaped quotes (`\"` pairs) held the event loop 72 ms in one string, and 1 MiB of them about 10 ms
 * within one slice. A run of backslashes before a quote is walked back in slices too (8 MiB of them
 * held it about 9 ms).
 */
export function* closingQuote(bytes: Uint8Array, from: number): Generator<void, number> {
  let turn = from + SLICE_BYTES;
  let quotes = 0;
  // indexOf runs natively: a byte-by-byte loop over 8 MiB of long strings took 20 ms of the event loop.
  for (let q = bytes.indexOf(0x22, from); q >= 0; q = bytes.indexOf(0x22, q + 1)) {
    if (q >= turn || ++quotes > SLICE_QUOTES) {
      yield;
      turn = q + SLICE_BYTES;
      quotes = 0;
    }
    let at = q - 1;
    for (let stop = Math.max(from, at - SLICE_BYTES);; stop = Math.max(from, at - SLICE_BYTES)) {
      while (at >= stop && bytes[at] === 0x5c) at--;
      if (at < from || bytes[at] !== 0x5c) break;
      yield;
    }
    if ((q - 1 - at) % 2 === 0) return q;
  }
  return bytes.length;
}

const decoder = new TextDecoder();

/**
 * Whether a member name's raw bytes read, as the parser reads them, as `key`: compared byte by byte
 * when it has no escape (most names; decoding each of an 8 MiB body of short names held the event
 * loop about 27 ms a slice), decoded only when it has one (`"ev\u0065nts"`).
 */
function isName(raw: Uint8Array, key: string, keyBytes: Uint8Array): boolean {
  if (raw.indexOf(0x5c /* backslash */) < 0) {
    if (raw.length !== keyBytes.length) return false;
    for (let j = 0; j < raw.length; j++) if (raw[j] !== keyBytes[j]) return false;
    return true;
  }
  // An escape is never shorter than the character's UTF-8 bytes, and at most six bytes (\uXXXX) for each.
  if (raw.length < keyBytes.length || raw.length > 6 * keyBytes.length) return false;
  try {
    return JSON.parse(`"${decoder.decode(raw)}"`) === key;
  } catch {
    return false;
  }
}
