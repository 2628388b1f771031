/**
 * The widget room's error catalog: every refusal of the public widget routes and of widget
 * configuration, declared once. Rendered as `{message, code}` by the `widget` route family.
 * Messages never carry the caller's input (an id, an origin, a text).
 */
import { type AppError, declareErrors } from "../errors.ts";

export const widgetErrors = declareErrors({
  /** No such widget, or an id that cannot be one. */
  widget_not_found: { kind: "not_found", message: "Widget not found" },
  /** The request's `Origin` is missing or not one of the widget's allowed origins. */
  origin_not_allowed: { kind: "forbidden", message: "Origin not allowed" },
  /** Per client address or per widget; raised with `Retry-After`. */
  rate_limited: { kind: "rate_limited", message: "Rate limit exceeded" },
  /** The widget's answers for this UTC day are used up; raised with `Retry-After`. */
  daily_cap_reached: { kind: "rate_limited", message: "This widget has used up its answers for today" },
  /** The body is not JSON at all. */
  body_media_type: { kind: "unprocessable", code: "invalid_request", message: "Content-Type must be application/json" },
  /** `why` is one of the body reader's own fixed phrases, never the parser's message. */
  body_malformed: {
    kind: "unprocessable",
    code: "invalid_request",
    message: (p: { why: string }) => `Malformed JSON body: ${p.why}`,
  },
  body_not_object: {
    kind: "unprocessable",
    code: "invalid_request",
    message: "Malformed JSON body: expected a JSON object",
  },
  /** Recommendations take words; a page URL is the page-analysis route's job. */
  query_is_url: { kind: "unprocessable", code: "invalid_request", message: "query: must be words, not a URL" },
  /** The widget's related articles are switched off (or it has no data model for them). */
  recommendations_disabled: { kind: "not_found", message: "Recommendations are off for this widget" },
  /** A configuration change names a prompt the tenant does not own. */
  prompt_not_found: {
    kind: "unprocessable",
    code: "invalid_widget_settings",
    message: (p: { index: number }) => `prompts.${p.index}: prompt not found`,
  },
  /** A suggested prompt may not be a campaign's: those show marked "Sponsored", while their campaign is active. */
  prompt_of_campaign: {
    kind: "unprocessable",
    code: "invalid_widget_settings",
    message: (p: { index: number }) => `prompts.${p.index}: a campaign's prompt shows only through campaign_ids`,
  },
  /** A configuration change names a campaign the tenant does not own. */
  campaign_not_found: {
    kind: "unprocessable",
    code: "invalid_widget_settings",
    message: (p: { index: number }) => `campaign_ids.${p.index}: campaign not found`,
  },
  /** Recommendations may only draw on a data model the widget's AI model is grounded on. */
  recommendations_data_model_not_grounding: {
    kind: "unprocessable",
    code: "invalid_widget_settings",
    message: "recommendations.data_model_id: must be one of the AI model's data models",
  },
  /** Hiding "powered by" is a white-label plan's right. */
  powered_by_needs_white_label: {
    kind: "unprocessable",
    code: "invalid_widget_settings",
    message: "attribution.show_powered_by: hiding it needs a white-label plan",
  },
  /** A new widget past the tenant's cap (`WIDGETS_MAX_PER_TENANT`). */
  widget_limit_reached: {
    kind: "conflict",
    message: (p: { max: number }) => `A tenant has at most ${p.max} widgets; change one of them instead`,
  },
  /** A new widget names an AI model the tenant does not own. */
  ai_model_not_found: {
    kind: "unprocessable",
    code: "invalid_widget_settings",
    message: "ai_model_id: AI model not found",
  },
  /** The widget's AI model is gone (deleted or moved); the publisher must fix the configuration. */
  widget_misconfigured: {
    kind: "unavailable",
    message: "This widget cannot answer: its configuration is incomplete",
  },
});

/** 404: no such widget, or an id that cannot be one. */
export const widgetNotFound = (): AppError => widgetErrors.widget_not_found();

/** 403: the request's `Origin` is missing or not one of the widget's allowed origins. */
export const originNotAllowed = (): AppError => widgetErrors.origin_not_allowed();

/** 429 per client address or per widget, with `Retry-After`. */
export const widgetRateLimited = (retryAfterS: number): AppError =>
  widgetErrors.rate_limited({ headers: { "Retry-After": String(retryAfterS) } });

/** 429: the widget's answers for this UTC day are used up; `Retry-After` names the next UTC midnight. */
export const dailyCapReached = (retryAfterS: number): AppError =>
  widgetErrors.daily_cap_reached({ headers: { "Retry-After": String(retryAfterS) } });

/** 404: the widget's related articles are switched off (or it has no data model for them). */
export const recommendationsDisabled = (): AppError => widgetErrors.recommendations_disabled();

/** 503: the widget's AI model is gone (deleted or moved); the publisher must fix the configuration. */
export const widgetMisconfigured = (): AppError => widgetErrors.widget_misconfigured();
