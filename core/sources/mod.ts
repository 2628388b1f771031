/** The sources room's face: what other rooms and the routes may use. */

export { SourceFormatError } from "./errors.ts";
export { guardMarkup } from "./markup_guard.ts";
export { WorkerSourceParser } from "./parser.ts";
export { SourcePoller } from "./poller.ts";
export { MAX_RETENTION_DAYS, SourceService } from "./service.ts";
export { SOURCE_KINDS, sourceInputSchema, SourceRepo } from "./source.ts";
export { htmlToText, isFeed, parseFeed, parseSource, SOURCE_TYPES } from "./feeds.ts";
