/** The sources room's face: what other rooms and the routes may use. */
import { lazily } from "../lazily.ts";

/** The feed and JSONL reader (`parseSource`, `SOURCE_TYPES`, ...), loaded on first use: it loads linkedom. */
export const feedReader = lazily(() => import("./feeds.ts"));

export { SourceFormatError } from "./errors.ts";
export { guardMarkup } from "./markup_guard.ts";
export { WorkerSourceParser } from "./parser.ts";
export { SourcePoller } from "./poller.ts";
export { MAX_RETENTION_DAYS, SourceService } from "./service.ts";
export { SOURCE_KINDS, sourceInputSchema, SourceRepo } from "./source.ts";
export type { SourceLimits } from "./source.ts";
