/**
 * Runs {@link extractArticle} off the main thread, so a page built to be slow to analyse (deeply
 * nested markup makes Readability's work grow steeply) can be stopped by terminating the worker.
 * Protocol: posts `{ ready: true }` once loaded; receives `{ id, html }`, answers `{ id, article }` or
 * `{ id, error }`.
 */
import { extractArticle } from "./article.ts";

interface WorkerScope {
  onmessage: ((e: MessageEvent<{ id: number; html: string }>) => void) | null;
  postMessage(message: unknown): void;
}

const scope = self as unknown as WorkerScope;
scope.onmessage = (e) => {
  const { id, html } = e.data;
  try {
    scope.postMessage({ id, article: extractArticle(html) });
  } catch (err) {
    scope.postMessage({ id, error: String(err) });
  }
};
// Loading linkedom and Readability takes a while on a busy machine; page deadlines start after it.
scope.postMessage({ ready: true });
