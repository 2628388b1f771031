/**
 * The member names of a JSON object, found in its bytes without decoding or parsing them: a paid
 * answer of 1,000 full texts is 21 MB, and `JSON.parse` of it (then `JSON.stringify` back) held the
 * event loop. Structural characters are ASCII, which never occurs inside a UTF-8 sequence, so the
 * bytes are read as they are; strings are skipped whole (json_count.ts `closingQuote`), and the
 * scan yields to other requests every few milliseconds.
 */
import { closingQuote } from "../json_count.ts";
import { timeSlicer } from "../timers.ts";

const QUOTE = 0x22, BACKSLASH = 0x5c, COMMA = 0x2c;
const OPEN_OBJECT = 0x7b, CLOSE_OBJECT = 0x7d, OPEN_ARRAY = 0x5b, CLOSE_ARRAY = 0x5d;
const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** A JSON object's top-level member names, and the index of its closing brace. */
export interface JsonObjectKeys {
  keys: string[];
  close: number;
}

/**
 * The names of the top-level members of `bytes` when it is a JSON object (`{...}` between white
 * space, brackets balanced, strings closed), and where it closes; else null. What lies between the
 * structural characters is not checked: a text that is not JSON may still get its names.
 */
export async function jsonObjectKeys(bytes: Uint8Array): Promise<JsonObjectKeys | null> {
  let start = 0, end = bytes.length - 1;
  while (start <= end && isSpace(bytes[start]!)) start++;
  while (end >= start && isSpace(bytes[end]!)) end--;
  if (bytes[start] !== OPEN_OBJECT || bytes[end] !== CLOSE_OBJECT) return null;
  const slice = timeSlicer();
  const decoder = new TextDecoder();
  const keys: string[] = [];
  let depth = 0;
  let expectKey = false;
  let steps = 0;
  for (let i = start; i <= end; i++) {
    const b = bytes[i]!;
    if (b === QUOTE) {
      // Most strings end at their first quote, found natively; one with an escaped quote is walked
      // with json_count's closingQuote (it yields inside long strings and backslash runs; no closing
      // quote is bytes.length, past the end).
      let close = bytes.indexOf(QUOTE, i + 1);
      if (close < 0 || bytes[close - 1] === BACKSLASH) {
        const find = closingQuote(bytes, i + 1);
        let found = find.next();
        while (!found.done) {
          await slice();
          found = find.next();
        }
        close = found.value;
      }
      if (close > end) return null;
      if (depth === 1 && expectKey) {
        try {
          keys.push(JSON.parse(decoder.decode(bytes.subarray(i, close + 1))));
        } catch {
          return null;
        }
        expectKey = false;
      }
      i = close;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      depth++;
      expectKey = b === OPEN_OBJECT && depth === 1;
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      depth--;
      // The object closes at the end, and nowhere before.
      if (depth < 0 || (depth === 0 && i !== end)) return null;
    } else if (b === COMMA && depth === 1) expectKey = true;
    if (++steps % 1024 === 0) await slice();
  }
  return depth === 0 ? { keys, close: end } : null;
}
