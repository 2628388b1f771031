/**
 * A pool worker for tests: holds its thread for `input.ms` (synchronously, like a slow parse),
 * then answers `input.tag`. It blocks in `Atomics.wait` rather than spinning: the thread is just
 * as unavailable, but a held worker burns no CPU, and a spinning one went on burning it after the
 * pool had terminated it, until its time was up (Deno's `terminate` does not stop a busy loop).
 */
import { serveJobs } from "../../core/worker_pool.ts";

const blocker = new Int32Array(new SharedArrayBuffer(4));

serveJobs((input: { tag: string; ms: number }) => {
  if (input.ms > 0) Atomics.wait(blocker, 0, 0, input.ms);
  return input.tag;
}, (err) => ({ message: String(err) }));
