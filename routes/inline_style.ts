/**
 * CSP source for one inline `<style>` block: its SHA-256 hash, so a page allows exactly its own
 * style and no other inline style or script (never `'unsafe-inline'`).
 */
import { createHash } from "node:crypto";

/** `'sha256-<base64>'` of `css`, exactly as the page carries it between `<style>` and `</style>`. */
export function styleHashSource(css: string): string {
  return `'sha256-${createHash("sha256").update(css).digest("base64")}'`;
}
