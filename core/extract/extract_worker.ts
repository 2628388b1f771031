/**
 * Runs {@link extractArticle} off the main thread, so a page built to be slow to analyse (deeply
 * nested markup makes Readability's work grow steeply) can be stopped by terminating the worker.
 * Protocol: core/worker_pool.ts (`{ id, input: html }` -> `{ id, output: article }`).
 */
import { extractArticle } from "./article.ts";
import { serveJobs } from "../worker_pool.ts";

serveJobs(extractArticle, (err) => ({ message: err instanceof Error ? err.message : String(err) }));
