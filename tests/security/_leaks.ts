/** What must never come back in a public error: the caller's input, or a library's own words. */

/** A marker put into hostile inputs; a body that carries it echoed the input. */
export const MARKER = "LEAK-7f3a<script>";

/**
 * Phrases of the libraries and the runtime (and a test's fake upstream secret) that must never be in
 * a body:
 * - V8's JSON parser, and its error classes with a colon (`TypeError: ...`) or a stack frame;
 * - zod: its error's name, and its issue list as JSON text (an issue's `"path": [` or
 *   `"code": "invalid_type"`, escaped or not, and `Invalid input: expected ...`);
 * - jose's error names;
 * - DuckDB's error classes (`Binder Error:`, `Conversion Error:` ...);
 * - Deno KV's limits, and fetch's network failures.
 */
export const LIBRARY_TEXT = new RegExp(
  [
    /Unexpected token|JSON at position|is not valid JSON:|Unexpected end of JSON/,
    /\b(Type|Range|Syntax|Reference)Error: |at [\w.<>]+ \((file|ext|node):/,
    /Reference not found|ZodError|\\?"code\\?": ?\\?"invalid_type|\\?"path\\?": ?\[|Invalid input: expected/,
    /JWSInvalid|JWTInvalid|Invalid Compact JWS|JWS Protected Header/,
    /(Binder|Parser|Conversion|Catalog|Out of Range|Invalid Input|Serialization|Constraint|IO) Error: /,
    /Key too large|Value too large|error sending request|dns error|tcp connect error|Connection refused/,
    /sk-leak/,
  ].map((r) => r.source).join("|"),
);

/** True when `text` carries the marker of {@link MARKER}. */
export const echoesMarker = (text: string): boolean => text.includes("LEAK-7f3a");
