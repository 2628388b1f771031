import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { base64url, randomBytes, timingSafeEqual } from "../../core/crypto.ts";

const TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

/**
 * CSRF protection for the server-rendered forms a human submits (claim page, checkout): a
 * double-submit token (an HttpOnly SameSite=Strict cookie and a hidden field, compared in constant
 * time) plus an `Origin` check when the browser sends one.
 */
export class FormCsrf {
  constructor(private readonly opts: { cookie: string; path: string; secure: boolean; trustedOrigins?: string[] }) {}

  /** A fresh token for the page's forms; sets its cookie on the response. */
  issue(c: Context): string {
    const token = base64url(randomBytes(32));
    setCookie(c, this.opts.cookie, token, {
      path: this.opts.path,
      httpOnly: true,
      sameSite: "Strict",
      secure: this.opts.secure,
      maxAge: 3600,
    });
    return token;
  }

  /** Whether a submitted form carries the cookie's token and comes from our own origin. */
  check(c: Context, field: string | null): boolean {
    const cookie = getCookie(c, this.opts.cookie) ?? "";
    const value = field ?? "";
    return this.#sameOrigin(c) && TOKEN_RE.test(value) && timingSafeEqual(value, cookie);
  }

  // A browser always sends Origin on a cross-site POST; its absence means a same-origin browser
  // of old or a non-browser client, which the token alone covers. Our host is compared without the
  // scheme (behind a TLS terminator the request URL says http), so an https deployment (Secure
  // cookies) refuses any http Origin: a page on http://{our host}, which a network attacker can
  // write and where a non-Secure cookie of the same name can be planted, is not us.
  #sameOrigin(c: Context): boolean {
    const origin = c.req.header("origin");
    if (origin === undefined) return true;
    if (this.opts.trustedOrigins?.includes(origin)) return true;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (this.opts.secure && url.protocol !== "https:") return false;
    return origin === new URL(c.req.url).origin || url.host === c.req.header("host");
  }
}
