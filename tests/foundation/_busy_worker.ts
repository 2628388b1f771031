/** A pool worker for tests: holds its thread for `input.ms` (synchronously), then answers `input.tag`. */
import { serveJobs } from "../../core/worker_pool.ts";

serveJobs((input: { tag: string; ms: number }) => {
  const until = performance.now() + input.ms;
  while (performance.now() < until) { /* busy, like a slow parse */ }
  return input.tag;
}, (err) => ({ message: String(err) }));
