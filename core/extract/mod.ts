/** The extract room's face: what other rooms and the routes may use. */

export { decodeHtml, WebPageAnalyzer } from "./analyzer.ts";
export { WorkerExtractor } from "./extractor.ts";
export type { ArticleExtractor } from "./extractor.ts";
