/** Deepest nesting of arrays and objects a JSON request body may have. */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether JSON text nests arrays and objects at most `max` deep, by one pass over the text that
 * skips strings (it does not check the syntax: the parser does). `JSON.parse` of 1 MB of `[` took
 * 250 ms of the event loop, and copying such a value from a worker overflowed the stack.
 */
export function nestsAtMost(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // To the closing quote, over escapes.
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === 0x5c /* \ */) i++;
        else if (s === 0x22) break;
      }
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return false;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return true;
}
