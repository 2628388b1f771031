import { FixedClock } from "../../core/clock.ts";
import { OutboxMailer } from "../../core/identity/mailer.ts";
import { seedStorefront } from "../../fixtures/storefront.ts";
import { createTestWorld, type TestWorld } from "../_helpers.ts";
import { type LocalIdp, startLocalIdp } from "./_idp.ts";

/** Where the test storefront answers (BASE_URL of the test world; AGENT_AUTH_URL defaults to it). */
export const SF = "http://svc.test";
/** The network authorization-server issuer of the test world. */
export const ISSUER = "http://svc.test/network";

/** A test world with the demo seller and, unless `idp: false`, a trusted local identity provider. */
export interface StorefrontWorld extends TestWorld, AsyncDisposable {
  idp: LocalIdp;
  /** POST JSON to a storefront path. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  /** POST form-urlencoded to a path. */
  form(path: string, fields: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
}

export async function storefrontWorld(
  { env = {}, fetch, wrapKv }: {
    env?: Record<string, string>;
    fetch?: typeof globalThis.fetch;
    /** Stands in front of the world's KV (see `createTestWorld`). */
    wrapKv?: (kv: Deno.Kv) => Deno.Kv;
  } = {},
): Promise<StorefrontWorld> {
  const clock = new FixedClock("2026-11-22T12:00:00Z");
  const idp = await startLocalIdp({ audience: ISSUER, clock });
  const w = await createTestWorld({
    clock,
    fetch,
    wrapKv,
    env: {
      TRUSTED_ISSUERS: JSON.stringify([{ issuer: idp.issuer, jwks_url: idp.jwksUrl }]),
      STOREFRONT_RATE_LIMIT: "100000",
      // The human's mailbox in tests: the KV outbox, read in-process (tests with SMTP_URL read a local SMTP server).
      MAIL_OUTBOX: "true",
      ...env,
    },
  });
  const { tenantId } = await w.tenantWithKey("Storefront Tenant");
  await seedStorefront(w.deps, { tenantId } as never);
  const close = async () => {
    await w.close();
    await idp.close();
  };
  return {
    ...w,
    idp,
    post: (path, body, headers = {}) =>
      Promise.resolve(w.app.request(`${SF}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      })),
    form: (path, fields, headers = {}) =>
      Promise.resolve(w.app.request(`${SF}${path}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams(fields).toString(),
      })),
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Reads a JSON body with its status, for one-line assertions. */
export async function json(res: Response): Promise<{ status: number; body: Record<string, unknown> }> {
  return { status: res.status, body: await res.json() };
}

/** The verification code in a claim e-mail's text (quoted-printable soft breaks allowed). */
export function mailCodeIn(text: string): string | null {
  return /verification code: ([A-Z]{4}-[A-Z]{4})/.exec(text.replace(/=\r?\n/g, ""))?.[1] ?? null;
}

/**
 * The human reading their mailbox: the code of the claim e-mail that carries `verificationUri`,
 * from the world's outbox mailer (MAIL_OUTBOX). Tests with SMTP_URL read their SMTP server instead.
 */
export async function mailCodeFromOutbox(w: TestWorld, verificationUri: string): Promise<string> {
  const mailer = w.deps.mailer;
  if (!(mailer instanceof OutboxMailer)) throw new Error("the world has no outbox mailer: pass mailCode");
  const mail = (await mailer.list(500)).find((m) => m.text.includes(verificationUri));
  const code = mail ? mailCodeIn(mail.text) : null;
  if (!code) throw new Error(`no claim e-mail carries ${verificationUri}`);
  return code;
}

/** A claim page response: status, HTML, and what the test reads from it. */
export interface ClaimPageView {
  status: number;
  html: string;
  userCode: string | null;
}

/**
 * Plays the human on the claim page: opens the link, enters the code from the e-mail (read from
 * the outbox unless `mailCode` is given), then posts the decision with the page's CSRF field,
 * cookie and mailbox proof. Returns the page after the decision and the user code when shown.
 */
export async function decideOnPage(
  w: TestWorld,
  verificationUri: string,
  decision: "confirm" | "deny",
  { mailCode }: { mailCode?: string } = {},
): Promise<ClaimPageView> {
  const code = mailCode ?? await mailCodeFromOutbox(w, verificationUri);
  const page = await w.app.request(verificationUri);
  const html = await page.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  const cookie = page.headers.get("set-cookie")?.split(";")[0];
  if (!csrf || !cookie) throw new Error(`claim page offered no form (status ${page.status}): ${html.slice(0, 200)}`);
  const post = (fields: Record<string, string>) =>
    w.app.request(verificationUri, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie, origin: new URL(verificationUri).origin },
      body: new URLSearchParams({ csrf, ...fields }).toString(),
    });
  const verified = await post({ mail_code: code });
  const verifiedHtml = await verified.text();
  const proof = /name="proof" value="([^"]+)"/.exec(verifiedHtml)?.[1];
  if (!proof) return { status: verified.status, html: verifiedHtml, userCode: null };
  const res = await post({ proof, decision });
  const out = await res.text();
  return { status: res.status, html: out, userCode: userCodeIn(out) };
}

/** The user code a claim page shows, if any. */
export function userCodeIn(html: string): string | null {
  return /id="user-code">([A-Z]{4}-[A-Z]{4})</.exec(html)?.[1] ?? null;
}

/** service_auth registration, then the claim request; returns the claim token and the link. */
export async function startServiceAuthClaim(
  w: StorefrontWorld,
  email = "grace@example.com",
): Promise<{ claimToken: string; verificationUri: string }> {
  const reg = await json(await w.post("/agent/identity", { type: "service_auth", login_hint: email }));
  if (reg.status !== 200) throw new Error(`service_auth failed: ${JSON.stringify(reg)}`);
  const claimToken = (reg.body.claim as { token: string }).token;
  const req = await json(
    await w.post("/agent/identity/claim", { type: "service_auth", claim_token: claimToken, login_hint: email }),
  );
  if (req.status !== 200) throw new Error(`claim failed: ${JSON.stringify(req)}`);
  const verificationUri = (req.body.claim as { attempt: { verification_uri: string } }).attempt.verification_uri;
  return { claimToken, verificationUri };
}
