/**
 * The contract for the links a SearchResult carries: `source_url` (our tracking redirect) and
 * `image_url` (our resizing image endpoint). Implemented in core/links/tracking.ts.
 */

/** The article fields a link needs; stored articles have more. */
export interface LinkArticle {
  id: string;
  url: string;
  /** The article's data model; when absent, {@link LinkContext.dataModelId} must name it. */
  dataModelId?: string;
  image?: string;
}

/** Who asked and where the article was shown; recorded with the click. */
export interface LinkContext {
  /** The data model searched (used when the article does not carry it). */
  dataModelId?: string;
  tenantId?: string;
  /** `payproxy:<agent-id>` on payproxy traffic. */
  caller?: string;
  requestId?: string;
  query?: string;
  /** 1-based rank of the article in the response. */
  position?: number;
  /** The Ask AI widget that showed the link: its click counts in that widget's figures. */
  widgetId?: string;
  /** The AI model whose answer cited the article: the click counts for it, as the answer's query does. */
  aiModelId?: string;
  /** The reader's widget session: the click joins that session. */
  sessionId?: string;
  /** Where on the page the widget showed it: the click event carries these fields too. */
  placement?: LinkPlacement;
}

/** The placement fields of a widget's click event (the analytics filters of spec 4.5). */
export interface LinkPlacement {
  placement_id?: string;
  deployment_type?: string;
  creative_id?: string;
  line_item_id?: string;
  publisher_id?: string;
}

/** Builds the signed links of search results. Synchronous: it runs once per result. */
export interface LinkBuilder {
  /** `${BASE_URL}/r/{token}`: 302 to `article.url`, recording an `article_click`. */
  trackingUrl(article: LinkArticle, ctx: LinkContext): string;
  /**
   * `${BASE_URL}/img?src={token}` for the article's image, or `undefined` when it has none. The URL
   * already has a query string, so `&w=<width>&h=<height>` can be appended to resize.
   */
  imageUrl(article: { image?: string }): string | undefined;
}
