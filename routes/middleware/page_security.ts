import type { MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";

/** Hono's CSP options (directive name in camelCase, its sources as a list); Hono does not export the type. */
export type ContentSecurityPolicyOptions = NonNullable<
  NonNullable<Parameters<typeof secureHeaders>[0]>["contentSecurityPolicy"]
>;

/** The security headers one page family sends; anything not named here is not sent. */
export interface PageSecurityOptions {
  /**
   * `Content-Security-Policy`, directive by directive (Hono writes `default-src 'none'; ...`). A
   * source may be a function of the request's context, read once the handler has run: a page can
   * name a source only its handler knows (where its form's answer redirects).
   */
  csp: ContentSecurityPolicyOptions;
  /** `X-Frame-Options`, e.g. `DENY`. */
  frameOptions?: string;
  /** `Referrer-Policy`, e.g. `no-referrer` or `same-origin`. */
  referrerPolicy?: string;
  /** `X-Content-Type-Options: nosniff`. */
  nosniff?: boolean;
}

/**
 * Hono's `secureHeaders` with exactly the headers a page names and every other default of Hono's
 * off (its HSTS, COOP, CORP, Origin-Agent-Cluster and the rest would change what the pages send:
 * HSTS belongs to the TLS terminator, CORP would stop the widget's cross-origin assets). Set on
 * every response of the routes it guards, error pages included.
 *
 * @example app.use("/docs/*", pageSecurity({ csp: { defaultSrc: ["'none'"] }, frameOptions: "DENY" }))
 */
export function pageSecurity(
  { csp, frameOptions, referrerPolicy, nosniff = false }: PageSecurityOptions,
): MiddlewareHandler {
  const secure = secureHeaders({
    contentSecurityPolicy: csp,
    xFrameOptions: frameOptions ?? false,
    referrerPolicy: referrerPolicy ?? false,
    xContentTypeOptions: nosniff,
    crossOriginEmbedderPolicy: false,
    crossOriginResourcePolicy: false,
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    strictTransportSecurity: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
    removePoweredBy: false,
  });
  // Hono reads the CSP's functions before the handler; run it after, so they see what the handler decided.
  const handled = () => Promise.resolve();
  return async function pageSecurity(c, next) {
    await next();
    await secure(c, handled);
  };
}
