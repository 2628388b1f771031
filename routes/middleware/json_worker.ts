/**
 * Decodes one large JSON request body off the main thread (see `decodeJsonOffThread` in body.ts):
 * receives the bytes, the most values the body may hold and the phrase for a body nested too deep,
 * answers `{ value }`, `{ why }` with one of our fixed phrases (never the parser's message: it
 * quotes the body), or `{ tooManyValues }`.
 */
import { nestsAtMost } from "../../core/json_depth.ts";

interface Scope {
  onmessage: ((e: MessageEvent<{ bytes: Uint8Array; maxValues: number; tooDeep: string }>) => void) | null;
  postMessage(message: unknown): void;
}
const scope = self as unknown as Scope;
scope.onmessage = (e) => {
  let value: unknown;
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(e.data.bytes);
    if (!nestsAtMost(text)) {
      scope.postMessage({ why: e.data.tooDeep });
      return;
    }
    value = JSON.parse(text);
  } catch (err) {
    scope.postMessage({ why: err instanceof SyntaxError ? "not valid JSON" : "not valid UTF-8" });
    return;
  }
  // The value is copied to the main thread value by value: millions of small ones (8 MB of `{},`)
  // took seconds there, so such a body goes no further than this thread.
  scope.postMessage(countsAtMost(value, e.data.maxValues) ? { value } : { tooManyValues: true });
};

/** Whether `value` holds at most `max` JSON values (itself, and every element and member, deeply). */
function countsAtMost(value: unknown, max: number): boolean {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (++count > max) return false;
    if (Array.isArray(v)) { for (const x of v) stack.push(x); }
    else if (v !== null && typeof v === "object") { for (const k in v) stack.push((v as Record<string, unknown>)[k]); }
  }
  return true;
}
