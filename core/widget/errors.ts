/**
 * The widget room's error catalog: every refusal of the public widget routes and of widget
 * configuration, declared once. Rendered as `{message, code}` by the `widget` route family.
 * Messages never carry the caller's input (an id, an origin, a text).
 */
import { AppError } from "../errors.ts";

/** 404: no such widget, or an id that cannot be one. */
export const widgetNotFound = () => new AppError(404, "widget_not_found", "Widget not found");

/** 403: the request's `Origin` is missing or not one of the widget's allowed origins. */
export const originNotAllowed = () => new AppError(403, "origin_not_allowed", "Origin not allowed");

/** 429 per client address or per widget, with `Retry-After`. */
export const widgetRateLimited = (retryAfterS: number) =>
  new AppError(429, "rate_limited", "Rate limit exceeded", { headers: { "Retry-After": String(retryAfterS) } });

/** 429: the widget's answers for this UTC day are used up; `Retry-After` names the next UTC midnight. */
export const dailyCapReached = (retryAfterS: number) =>
  new AppError(429, "daily_cap_reached", "This widget has used up its answers for today", {
    headers: { "Retry-After": String(retryAfterS) },
  });

/** 422: a field of the body is wrong; `message` names the field in our own words. */
export const invalidWidgetRequest = (message: string) => new AppError(422, "invalid_request", message);

/** 404: the widget's related articles are switched off (or it has no data model for them). */
export const recommendationsDisabled = () =>
  new AppError(404, "recommendations_disabled", "Recommendations are off for this widget");

/** 422: a configuration change names something the tenant does not own or may not use. */
export const invalidWidgetSettings = (message: string) => new AppError(422, "invalid_widget_settings", message);

/** 503: the widget's AI model is gone (deleted or moved); the publisher must fix the configuration. */
export const widgetMisconfigured = () =>
  new AppError(503, "widget_misconfigured", "This widget cannot answer: its configuration is incomplete");
