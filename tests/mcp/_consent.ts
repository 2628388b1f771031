/**
 * The human on the OAuth consent page, over plain HTTP (the Chromium test clicks the same forms):
 * opens the authorization URL, then chooses an anonymous identity, a claimed one (reading the
 * e-mailed code from the world's outbox), or denies. Returns where the page sent the browser.
 */
import assert from "node:assert/strict";
import { mailCodeIn } from "../storefront/_world.ts";
import { OutboxMailer } from "../../core/identity/mailer.ts";
import type { TestWorld } from "../_helpers.ts";

/** A consent page opened in a "browser": its form fields and cookie. */
export interface ConsentPage {
  status: number;
  html: string;
  csrf: string;
  request: string;
  cookie: string;
  /** Posts one of the page's forms; returns the response (a 303 to the client, or a page). */
  post(fields: Record<string, string>): Promise<Response>;
}

/** Opens the authorization URL on the storefront (`host` sent as the browser would). */
export async function openConsent(w: TestWorld, authorizationUrl: string): Promise<ConsentPage> {
  const res = await w.app.request(authorizationUrl);
  const html = await res.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
  const request = /name="request" value="([^"]+)"/.exec(html)?.[1] ?? "";
  const cookie = res.headers.get("set-cookie")?.split(";")[0] ?? "";
  const action = new URL("/oauth2/authorize", authorizationUrl).href;
  return {
    status: res.status,
    html,
    csrf,
    request,
    cookie,
    post: (fields) =>
      Promise.resolve(w.app.request(action, {
        method: "POST",
        redirect: "manual",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          cookie,
          origin: new URL(authorizationUrl).origin,
        },
        body: new URLSearchParams({ csrf, request, ...fields }).toString(),
      })),
  };
}

/** The newest verification code e-mailed to `email` (from the outbox mailer). */
export async function latestMailCode(w: TestWorld, email: string): Promise<string> {
  const mailer = w.deps.mailer;
  assert.ok(mailer instanceof OutboxMailer, "the world needs MAIL_OUTBOX=true");
  const mails = (await mailer.list(500)).filter((m) => m.to === email);
  // The outbox lists newest first.
  const code = mailCodeIn(mails[0]?.text ?? "");
  assert.ok(code, `no code e-mailed to ${email}`);
  return code;
}

/**
 * Plays the whole consent: `anonymous`, `deny`, or `{ email }` (the code is read from the outbox).
 * @returns the Location the page redirected to (the client's redirect URI with code or error).
 */
export async function consent(
  w: TestWorld,
  authorizationUrl: string,
  choice: "anonymous" | "deny" | { email: string },
): Promise<URL> {
  const page = await openConsent(w, authorizationUrl);
  assert.equal(page.status, 200, page.html.slice(0, 300));
  let res: Response;
  if (typeof choice === "string") {
    res = await page.post({ action: choice });
  } else {
    const sent = await page.post({ action: "email", email: choice.email });
    assert.equal(sent.status, 200, await sent.clone().text());
    await sent.body?.cancel();
    res = await page.post({ action: "code", mail_code: await latestMailCode(w, choice.email) });
  }
  assert.equal(res.status, 303, await res.clone().text());
  return new URL(res.headers.get("location")!);
}
