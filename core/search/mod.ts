/** The search room's face: what other rooms and the routes may use. */

export {
  outsideShard,
  parseSearchShard,
  publicLabel,
  requestedDataModel,
  serves,
  SHARD_RETRY_HEADER,
} from "./index/shard.ts";
export {
  FUSION_V2,
  isSearchType,
  isSearchVersion,
  SEARCH_TYPES,
  SEARCH_VERSION_DOC,
  SEARCH_VERSIONS,
  TERM_FEEDBACK_CANDIDATE,
} from "./rank/retrieval_mode.ts";
export {
  ArticleRepo,
  canonicalUrl,
  cleanCategories,
  cleanLabel,
  cutBody,
  domainOf,
  embeddingText,
  parsePubdate,
} from "./store/articles.ts";

export { OpenAiEmbeddings } from "./embeddings/openai.ts";
export type { EmbeddingProvider } from "./embeddings/provider.ts";
export { defaultCacheName, LocalEmbeddings } from "./embeddings/wink.ts";
export { isUrlQuery, MAX_INGEST_ITEMS, MAX_LISTED_CATEGORIES, mayReadFullText, SearchEngine } from "./engine.ts";
export type { ArticleService, IngestReport, Search, ServedResults } from "./engine.ts";
export { fullTextNotLicensed } from "./errors.ts";
export { Bm25Index } from "./index/bm25.ts";
export { articleBag, DataModelIndex, FORWARD_TERMS_PER_DOC } from "./index/index.ts";
export type { AnnOptions } from "./index/index.ts";
export type { SearchShard } from "./index/shard.ts";
export { TopK } from "./index/topk.ts";
export type { LinkBuilder, QueryCount, QuerySource, TrendChannel } from "./ports.ts";
export { filtersOf } from "./rank/filters.ts";
export type { Fusion } from "./rank/retrieval_mode.ts";
export { contentsField, highlightOptionsOf, MAX_TEXT_CHARACTERS, textOptionOf } from "./result_options.ts";
export { SUMMARY_LICENCE_HIGHLIGHT_CHARACTERS } from "./rank/highlights.ts";
export { pageLength } from "./recommend.ts";
export type { Article } from "./store/articles.ts";
export { RetentionSweeper } from "./store/retention.ts";
export { articleWithText } from "./text/full_text.ts";
export type { ArticleText } from "./text/full_text.ts";
export { terms } from "./text/tokenizer.ts";
export { SEARCH_ALGORITHMS, searchRequestSchema } from "./types.ts";
export type { RetrievedArticle, SearchRequest, SearchResponse, SearchResult } from "./types.ts";
export { pageAnalysisBusy, UrlAnalysisError } from "./url_analyzer.ts";
export type { AnalyzedPage, UrlAnalyzer } from "./url_analyzer.ts";
