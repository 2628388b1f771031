import type { MiddlewareHandler } from "hono";
import { botCaller, type WebBotAuth } from "../../core/web_bot_auth/mod.ts";
import type { AppEnv } from "../env.ts";
import { callerIs } from "../request_scope.ts";

/**
 * Names the caller of a request signed with Web Bot Auth: `webbot:<directory host>` when the
 * signature verified, `webbot-unverified` when signature material is there but did not verify.
 * Unsigned requests pass untouched (no I/O). A caller an authentication step already set (an
 * agent token, a payproxy signature) is kept: that identity is the stronger one.
 */
export function webBotIdentity(wba: WebBotAuth): MiddlewareHandler<AppEnv> {
  return async function webBotIdentity(c, next) {
    if (!c.get("caller") && (c.req.raw.headers.has("signature-input") || c.req.raw.headers.has("signature-agent"))) {
      const caller = botCaller(await wba.identify(c.req.raw));
      if (caller) callerIs(c, caller);
    }
    await next();
  };
}
