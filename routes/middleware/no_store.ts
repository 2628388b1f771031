import type { MiddlewareHandler } from "hono";

/**
 * Marks every answer of the routes it guards, errors included, as one no cache may keep
 * (`Cache-Control: no-store`, and `Pragma: no-cache` for HTTP/1.0 caches, as RFC 6749 5.1 asks of
 * token responses): for routes whose bodies carry credentials (assertions, refresh and claim
 * tokens, claim links).
 */
export const noStore: MiddlewareHandler = async function noStore(c, next) {
  await next();
  c.res.headers.set("Cache-Control", "no-store");
  c.res.headers.set("Pragma", "no-cache");
};
