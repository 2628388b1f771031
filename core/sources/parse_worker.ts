/**
 * Parses source documents off the main thread (see parser.ts). Protocol: core/worker_pool.ts
 * (`{ id, input: ParseJob }` -> `{ id, output: items }`, or `{ id, error, kind: "format" }` for a
 * {@link SourceFormatError}, whose message is public).
 */
import { runParseJob } from "./parse_job.ts";
import { SourceFormatError } from "./errors.ts";
import { serveJobs } from "../worker_pool.ts";

serveJobs(runParseJob, (err) =>
  err instanceof SourceFormatError
    ? { message: err.message, kind: "format" }
    // A stack overflow or an out-of-memory in the parser: our words, never the library's.
    : { message: "the document could not be read" });
