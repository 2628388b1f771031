/**
 * OpenAPI descriptions shared by every `/v1/analytics` route: the `{message}` error bodies of
 * spec 7.2 (and of the key check), and the section 8 headers (X-Cache, rate limit, Retry-After).
 */
import { z } from "@hono/zod-openapi";

const message = z.object({ message: z.string() }).openapi("AnalyticsError");
const errorBody = (description: string) => ({
  description,
  content: { "application/json": { schema: message } },
});

/** An OpenAPI response header described in words. */
export const header = (description: string) => ({ description, schema: { type: "string" as const } });

/** The rate-limit headers every analytics answer carries (429s included). */
export const RATE_LIMIT_HEADERS = {
  "X-RateLimit-Limit": header("Requests allowed per window (per API key)."),
  "X-RateLimit-Remaining": header("Requests left in the current window."),
  "X-RateLimit-Reset": header("Seconds until the window resets."),
  "RateLimit-Policy": header('IETF draft: `"default";q=<limit>;w=<window seconds>`.'),
  "RateLimit": header('IETF draft: `"default";r=<remaining>;t=<seconds to reset>`.'),
};

/** Headers of a 200 answer: how the cache was used, and the rate limit. */
export const ANSWER_HEADERS = {
  "X-Cache": header("`HIT`, `MISS`, `BYPASS` (`Cache-Control: no-cache`, exports) or `DISABLED`."),
  ...RATE_LIMIT_HEADERS,
};

/**
 * The error responses of an analytics route.
 * @param badRequest what makes this route's request a 400
 */
export function analyticsErrors(badRequest: string) {
  return {
    400: errorBody(badRequest),
    401: errorBody("Missing API key, or not `Authorization: Bearer ak_...`"),
    403: errorBody("Unknown or revoked API key"),
    429: {
      ...errorBody('`{"message": "rate limit exceeded"}`'),
      headers: { "Retry-After": header("Seconds to wait before the next request."), ...RATE_LIMIT_HEADERS },
    },
  };
}
