/**
 * Decodes one large JSON request body off the main thread (see `decodeJsonOffThread` in body.ts):
 * receives the bytes, answers `{ value }` or `{ why }` with one of our fixed phrases, never the
 * parser's message (it quotes the body).
 */
interface Scope {
  onmessage: ((e: MessageEvent<Uint8Array>) => void) | null;
  postMessage(message: unknown): void;
}
const scope = self as unknown as Scope;
scope.onmessage = (e) => {
  try {
    scope.postMessage({ value: JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(e.data)) });
  } catch (err) {
    scope.postMessage({ why: err instanceof SyntaxError ? "not valid JSON" : "not valid UTF-8" });
  }
};
