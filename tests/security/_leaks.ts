/** What must never come back in a public error: the caller's input, or a library's own words. */

/** A marker put into hostile inputs; a body that carries it echoed the input. */
export const MARKER = "LEAK-7f3a<script>";

/**
 * Phrases of V8, zod and jose (and a test's fake upstream secret) that must never be in a body.
 * zod's own: its error's name, and its issue list as JSON text (an issue's `"path": [` or
 * `"code": "invalid_type"`, escaped or not, and `Invalid input: expected ...`).
 */
export const LIBRARY_TEXT =
  /Unexpected token|JSON at position|is not valid JSON:|Unexpected end of JSON|Reference not found|ZodError|\\?"code\\?": ?\\?"invalid_type|\\?"path\\?": ?\[|Invalid input: expected|JWSInvalid|JWTInvalid|Invalid Compact JWS|JWS Protected Header|sk-leak/;

/** True when `text` carries the marker of {@link MARKER}. */
export const echoesMarker = (text: string): boolean => text.includes("LEAK-7f3a");
