import { html } from "hono/html";
import type { Clock } from "../clock.ts";
import { base64url, randomBytes, sha256Hex, timingSafeEqual } from "../crypto.ts";
import type { AppError, RaiseOptions } from "../errors.ts";
import { identityErrors } from "./errors.ts";
import { newId } from "../ids.ts";
import type { Logger } from "../log.ts";
import type { FixedWindowLimiter } from "../rate_limit.ts";
import type { AccountStore } from "./accounts.ts";
import { isEmail, isPlusAliased, mailboxKey, normalizeEmail } from "./emails.ts";
import type { IssuedClaim, IssuedIdentity } from "./identity_body.ts";
import type { Mailer, MailMessage } from "./mailer.ts";
import type { RefreshTokens } from "./refresh_tokens.ts";
import type { TokenService } from "./tokens.ts";
import type { Claim, ClaimAttempt, Credential, Seller } from "./types.ts";
import { formatUserCode, newUserCode, normalizeUserCode } from "./user_code.ts";

/** Wrong user codes allowed per confirmed attempt; the next try answers `too_many_attempts`. */
export const MAX_WRONG_CODES = 5;
/** Wrong e-mailed codes allowed on the claim page per e-mail; then the link is locked. */
export const MAX_WRONG_MAIL_CODES = 5;
/**
 * Verification e-mails one claim may send. With {@link MAX_WRONG_MAIL_CODES} this bounds the
 * guesses at a mail code to 25 per claim (each 1 in 20^8), and the mail a victim can receive.
 */
export const MAX_CLAIM_EMAILS = 5;
// A service_auth claim token (not its e-mailed link) stays usable this long.
const PENDING_CLAIM_TTL_S = 86_400;
const CLAIM_TOKEN_RE = /^clt_[A-Za-z0-9_-]{43}$/;
const LINK_RE = /^[A-Za-z0-9_-]{43}$/;
const PROOF_RE = /^[A-Za-z0-9_-]{43}$/;

/** A claim e-mail over its per-address or per-seller limit, in the storefront's rate-limit shape. */
const claimMailLimited = (limited: (options: RaiseOptions) => AppError, retryAfterS: number) =>
  limited({ extra: { retry_after: retryAfterS }, headers: { "Retry-After": String(retryAfterS) } });

/** What the claim page shows for a link. */
export type ClaimPageState =
  | { kind: "unknown" }
  | { kind: "expired" }
  /** Waiting for the code from the e-mail. */
  | { kind: "pending"; email: string; sellerId: string; expiresAt: string }
  /** The mail code was used; only the browser holding the proof may decide. */
  | { kind: "proven" }
  /** Too many wrong mail codes for this e-mail. */
  | { kind: "locked" }
  | { kind: "confirmed" }
  | { kind: "denied" }
  | { kind: "completed" };

/** What entering the e-mailed code on the page leads to. */
export type MailCodeResult =
  | ClaimPageState
  /** Mailbox control proven: `proof` (shown to this browser only) lets it confirm or deny. */
  | { kind: "mail_proven"; proof: string; email: string; sellerId: string; expiresAt: string }
  | { kind: "wrong_mail_code"; triesLeft: number; email: string; sellerId: string; expiresAt: string };

/**
 * Claims (spec 3 and 5.3.4): a claim token is handed to the agent; `requestVerification` e-mails
 * the human a link to the claim page and a one-time code. The link is also returned to the agent
 * (spec 2.9), so it proves nothing: the page first asks for the e-mailed code (`proveMailbox`),
 * which appears only in the e-mail, and hands the browser that entered it a proof; with that
 * proof the human confirms (and is shown a user code) or denies; `complete` trades the claim
 * token and the user code for a claimed credential, exactly once.
 */
export class ClaimService {
  constructor(
    private readonly kv: Deno.Kv,
    private readonly clock: Clock,
    private readonly accounts: AccountStore,
    private readonly refresh: RefreshTokens,
    private readonly tokens: TokenService,
    private readonly mailer: Mailer,
    private readonly log: Logger,
    private readonly opts: {
      claimTtlS: number;
      /** The claim page of a verification link, on the storefront of the seller it was asked at. */
      claimPageUrl: (link: string, seller: Seller) => string;
      /**
       * Claim e-mails per recipient address and per seller, counted before a mail goes out: the
       * per-claim cap and the per-client-address limit alone let anyone mail a victim from many claims.
       */
      mailLimits?: { perAddress: FixedWindowLimiter; perSeller: FixedWindowLimiter };
    },
  ) {}

  /**
   * A new claim (added to `op` so it lands with what opened it).
   * @param expiresAt defaults to a day from now; anonymous claims die with their credential.
   */
  async openInto(
    op: Deno.AtomicOperation,
    init: { origin: Claim["origin"]; email?: string; credentialId?: string; sellerId: string; expiresAt?: string },
  ): Promise<IssuedClaim> {
    const token = "clt_" + base64url(randomBytes(32));
    const now = this.clock.now();
    const expiresAt = init.expiresAt ?? new Date(now.getTime() + PENDING_CLAIM_TTL_S * 1000).toISOString();
    const claim: Claim = {
      claimId: newId("cl", this.clock),
      origin: init.origin,
      ...(init.email ? { email: init.email } : {}),
      ...(init.credentialId ? { credentialId: init.credentialId } : {}),
      sellerId: init.sellerId,
      createdAt: now.toISOString(),
      expiresAt,
    };
    const ttlMs = Date.parse(expiresAt) - now.getTime();
    op.set(["claim", await sha256Hex(token)], claim, { expireIn: ttlMs + 86_400_000 });
    return { token, expiresIn: Math.floor(ttlMs / 1000), ...(init.email ? { loginHint: init.email } : {}) };
  }

  /** Opens a claim on its own (identity_assertion for a known e-mail). */
  async open(init: Parameters<ClaimService["openInto"]>[1]): Promise<IssuedClaim> {
    const op = this.kv.atomic();
    const issued = await this.openInto(op, init);
    await op.commit();
    return issued;
  }

  /**
   * POST /agent/identity/claim: checks the address and e-mails the human a verification link.
   * A new request replaces the previous attempt (its link stops working).
   * @throws `invalid_claim_token` (also for a claim opened at another storefront), `already_claimed`,
   * `claim_denied` (the human denied it), `claim_expired`, `invalid_login_hint`.
   */
  async requestVerification(
    claimToken: string,
    loginHint: string,
    seller: Seller,
  ): Promise<{ verificationUri: string; expiresIn: number }> {
    const sellerName = seller.name;
    let counted = false;
    for (let i = 0; i < 8; i++) {
      const { entry, claim, hash } = await this.#load(claimToken);
      // The e-mail names the storefront asked and links to its claim page, and counts on its budget:
      // only the storefront the claim was opened at (the one its page names) may send it.
      if (claim.sellerId !== seller.sellerId) throw identityErrors.claim_other_storefront();
      // The human's "no" is final for this claim: a new attempt would replace it and mail them again.
      if (claim.attempt?.status === "denied") throw identityErrors.claim_denied();
      const now = this.clock.now();
      if (!isEmail(loginHint)) throw identityErrors.invalid_login_hint();
      if (isPlusAliased(loginHint)) {
        throw identityErrors.login_hint_plus_alias();
      }
      const email = normalizeEmail(loginHint);
      if (claim.email && claim.email !== email) {
        throw identityErrors.login_hint_other_address();
      }
      const sent = claim.emailsSent ?? 0;
      if (sent >= MAX_CLAIM_EMAILS) {
        throw identityErrors.claim_mails_exhausted();
      }
      if (!counted) {
        await this.#countMail(email, claim.sellerId);
        counted = true;
      }
      const link = base64url(randomBytes(32));
      const linkHash = await sha256Hex(link);
      const mailCode = newUserCode();
      const ttl = this.opts.claimTtlS;
      // The attempt ends with the claim at the latest (an anonymous identity's claim dies with it).
      const endsAt = this.#endsBy(claim, now, ttl);
      const expiresIn = Math.floor((Date.parse(endsAt) - now.getTime()) / 1000);
      const attempt: ClaimAttempt = {
        linkHash,
        email,
        sentAt: now.toISOString(),
        expiresAt: endsAt,
        status: "sent",
        mailCodeHash: await sha256Hex(mailCode),
        wrongMailCodes: 0,
        wrongCodes: 0,
      };
      const keep = { expireIn: this.#keepMs(claim) };
      const res = await this.kv.atomic().check(entry)
        .set(["claim", hash], { ...claim, attempt, emailsSent: sent + 1 }, keep)
        .set(["claim_link", linkHash], hash, { expireIn: (ttl + 86_400) * 1000 })
        .commit();
      if (!res.ok) continue;
      const uri = this.opts.claimPageUrl(link, seller);
      try {
        await this.mailer.send(
          claimEmail({
            to: email,
            sellerName,
            uri,
            mailCode,
            timeLeft: timeLeftText(Date.parse(endsAt) - now.getTime()),
          }),
        );
      } catch (cause) {
        this.log.error("claim e-mail not sent", {
          claim_id: claim.claimId,
          mailer: this.mailer.kind,
          error: String(cause),
        });
        // Not sent, so not one of the claim's five: a mailer outage must not use them up. The attempt
        // stays (its link reached no one), unless the claim moved on meanwhile.
        await this.kv.atomic().check({ key: ["claim", hash], versionstamp: res.versionstamp })
          .set(["claim", hash], { ...claim, attempt, emailsSent: sent }, keep).commit().catch(() => {});
        throw identityErrors.mail_unavailable({ cause });
      }
      return { verificationUri: uri, expiresIn };
    }
    throw new Error("claim update kept conflicting");
  }

  /**
   * Counts one claim e-mail to `email` and from `sellerId`.
   * @throws 429 `rate_limit_exceeded` (with `retry_after`) when either is over its limit.
   */
  async #countMail(email: string, sellerId: string): Promise<void> {
    const limits = this.opts.mailLimits;
    if (!limits) return;
    // Counted per mailbox (dotted Gmail spellings are one), kept hashed: the limiter's keys are no list of who was mailed.
    const to = await limits.perAddress.hit(await sha256Hex(mailboxKey(email)));
    if (!to.allowed) throw claimMailLimited(identityErrors.claim_mails_to_address, to.retryAfterS);
    const from = await limits.perSeller.hit(sellerId);
    if (!from.allowed) throw claimMailLimited(identityErrors.claim_mails_from_storefront, from.retryAfterS);
  }

  /** The service's clock reading (the claim page shows minutes left). */
  now(): Date {
    return this.clock.now();
  }

  /** What the claim page shows for `link`. */
  async pageState(link: string): Promise<ClaimPageState> {
    const found = await this.#byLink(link);
    if (!found) return { kind: "unknown" };
    const { claim } = found;
    const a = claim.attempt!;
    if (claim.completedAt) return { kind: "completed" };
    if (a.status === "confirmed") return { kind: "confirmed" };
    if (a.status === "denied") return { kind: "denied" };
    if (this.#past(a.expiresAt) || this.#past(claim.expiresAt)) return { kind: "expired" };
    if (a.mailProvenAt) return { kind: "proven" };
    if (a.wrongMailCodes >= MAX_WRONG_MAIL_CODES) return { kind: "locked" };
    return { kind: "pending", email: a.email, sellerId: claim.sellerId, expiresAt: a.expiresAt };
  }

  /**
   * The code from the e-mail, entered on the claim page. Single-use: the first correct entry
   * consumes it (the commit is guarded by the claim's versionstamp) and returns a fresh proof for
   * that browser only. Wrong entries count; after {@link MAX_WRONG_MAIL_CODES} the link is locked.
   */
  async proveMailbox(link: string, mailCode: string): Promise<MailCodeResult> {
    for (let i = 0; i < 16; i++) {
      const found = await this.#byLink(link);
      if (!found) return { kind: "unknown" };
      const state = await this.pageState(link);
      if (state.kind !== "pending") return state;
      const { entry, claim, hash } = found;
      const a = claim.attempt!;
      const code = normalizeUserCode(mailCode);
      // Hash first so the comparison is between equal-length digests, in constant time.
      const ok = timingSafeEqual(await sha256Hex(code ?? "-"), a.mailCodeHash) && code !== null;
      let attempt: ClaimAttempt;
      let proof: string | null = null;
      if (ok) {
        proof = base64url(randomBytes(32));
        attempt = { ...a, mailProvenAt: this.clock.now().toISOString(), proofHash: await sha256Hex(proof) };
      } else {
        attempt = { ...a, wrongMailCodes: a.wrongMailCodes + 1 };
      }
      const res = await this.kv.atomic().check(entry)
        .set(["claim", hash], { ...claim, attempt }, { expireIn: this.#keepMs(claim) })
        .commit();
      if (!res.ok) continue;
      const shown = { email: a.email, sellerId: claim.sellerId, expiresAt: a.expiresAt };
      if (proof) return { kind: "mail_proven", proof, ...shown };
      const triesLeft = MAX_WRONG_MAIL_CODES - attempt.wrongMailCodes;
      return triesLeft > 0 ? { kind: "wrong_mail_code", triesLeft, ...shown } : { kind: "locked" };
    }
    throw new Error("claim update kept conflicting");
  }

  /**
   * The human's decision on the claim page, by the browser that proved mailbox control (`proof`
   * from {@link proveMailbox}). Confirming returns the user code (shown once, as XXXX-XXXX).
   * @returns the page state after the decision, with the code when confirmed now; `pending` or
   * `proven` when the proof is missing or wrong (nothing is decided).
   */
  async decide(
    link: string,
    decision: "confirm" | "deny",
    proof: string,
  ): Promise<ClaimPageState | { kind: "code"; userCode: string; expiresAt: string } | { kind: "proof_required" }> {
    for (let i = 0; i < 8; i++) {
      const found = await this.#byLink(link);
      if (!found) return { kind: "unknown" };
      const state = await this.pageState(link);
      if (state.kind === "pending") return { kind: "proof_required" };
      if (state.kind !== "proven") return state;
      const { entry, claim, hash } = found;
      const now = this.clock.now();
      const a = claim.attempt!;
      const proofOk = PROOF_RE.test(proof) && timingSafeEqual(await sha256Hex(proof), a.proofHash ?? "");
      if (!proofOk) return { kind: "proof_required" };
      let attempt: ClaimAttempt;
      let code: { userCode: string; expiresAt: string } | null = null;
      if (decision === "deny") {
        attempt = { ...a, status: "denied", decidedAt: now.toISOString() };
      } else {
        const userCode = newUserCode();
        code = { userCode, expiresAt: this.#endsBy(claim, now, this.opts.claimTtlS) };
        attempt = {
          ...a,
          status: "confirmed",
          decidedAt: now.toISOString(),
          userCodeHash: await sha256Hex(userCode),
          userCodeExpiresAt: code.expiresAt,
        };
      }
      const res = await this.kv.atomic().check(entry)
        .set(["claim", hash], { ...claim, attempt }, { expireIn: this.#keepMs(claim) })
        .commit();
      if (!res.ok) continue;
      // The user code is only ever in this return value: the page shows it to the proven browser.
      // Its time left is the page's to show: the code ends with the claim at the latest.
      return code
        ? { kind: "code", userCode: formatUserCode(code.userCode), expiresAt: code.expiresAt }
        : { kind: "denied" };
    }
    throw new Error("claim decision kept conflicting");
  }

  /**
   * POST /agent/identity/claim/complete. Exactly one of concurrent completions wins: the claim's
   * versionstamp guards the commit and a loser re-reads it as `already_claimed`.
   * @throws `invalid_claim_token` 401, `already_claimed` 409, `claim_expired` 410, `claim_not_confirmed` 409,
   * `claim_denied` 403, `too_many_attempts` 403, `user_code_expired` 410, `invalid_user_code` 400.
   */
  async complete(claimToken: string, userCode: string): Promise<IssuedIdentity> {
    for (let i = 0; i < 16; i++) {
      const { entry, claim, hash, credential } = await this.#load(claimToken);
      const a = claim.attempt;
      if (!a) {
        throw identityErrors.claim_not_requested();
      }
      if (a.status === "denied") throw identityErrors.claim_denied();
      if (a.status === "sent") {
        if (this.#past(a.expiresAt)) throw identityErrors.claim_link_expired();
        throw identityErrors.claim_not_confirmed();
      }
      if (a.wrongCodes >= MAX_WRONG_CODES) {
        throw identityErrors.user_code_attempts_exhausted();
      }
      if (this.#past(a.userCodeExpiresAt!)) {
        throw identityErrors.user_code_expired();
      }
      const code = normalizeUserCode(userCode);
      const ok = code !== null && timingSafeEqual(await sha256Hex(code), a.userCodeHash!);
      if (!ok) {
        const res = await this.kv.atomic().check(entry)
          .set(["claim", hash], { ...claim, attempt: { ...a, wrongCodes: a.wrongCodes + 1 } }, {
            expireIn: this.#keepMs(claim),
          })
          .commit();
        if (!res.ok) continue;
        throw identityErrors.invalid_user_code();
      }

      const now = this.clock.now().toISOString();
      const op = this.kv.atomic().check(entry);
      const account = await this.accounts.accountInto(op, a.email);
      let cred: Credential;
      if (credential) {
        cred = { ...credential.value, state: "claimed", accountId: account.accountId, claimedAt: now };
        delete cred.expiresAt;
        op.check(credential).set(["credential", cred.credentialId], cred)
          .set(["account_credential", account.accountId, cred.credentialId], cred.credentialId);
      } else {
        const type = claim.origin === "interaction" ? "identity_assertion" : "service_auth";
        cred = this.accounts.claimedCredentialInto(op, type, account.accountId, claim.sellerId);
      }
      op.set(["claim", hash], { ...claim, completedAt: now, completedCredentialId: cred.credentialId }, {
        expireIn: this.#keepMs(claim),
      });
      const refresh = await this.refresh.issueInto(op, cred.credentialId);
      if (!(await op.commit()).ok) continue;
      const { assertion, expiresIn } = await this.tokens.mintAssertion(cred, refresh.familyId);
      return {
        credential: cred,
        account,
        assertion,
        assertionExpiresIn: expiresIn,
        refresh: { token: refresh.token, expiresIn: refresh.expiresIn },
      };
    }
    throw new Error("claim completion kept conflicting");
  }

  /** Loads a claim by token and applies the checks shared by request and complete. */
  async #load(claimToken: string) {
    if (!CLAIM_TOKEN_RE.test(claimToken)) throw identityErrors.invalid_claim_token();
    const hash = await sha256Hex(claimToken);
    const entry = await this.kv.get<Claim>(["claim", hash]);
    const claim = entry.value;
    if (!claim) throw identityErrors.invalid_claim_token();
    if (claim.completedAt) throw identityErrors.already_claimed();
    let credential: Deno.KvEntry<Credential> | null = null;
    if (claim.credentialId) {
      const c = await this.kv.get<Credential>(["credential", claim.credentialId]);
      if (!c.value || c.value.revokedAt) throw identityErrors.claim_credential_gone();
      if (c.value.state === "claimed") throw identityErrors.credential_already_claimed();
      credential = c as Deno.KvEntry<Credential>;
    }
    if (this.#past(claim.expiresAt)) throw identityErrors.claim_expired();
    return { entry: entry as Deno.KvEntry<Claim>, claim, hash, credential };
  }

  async #byLink(link: string) {
    if (!LINK_RE.test(link)) return null;
    const linkHash = await sha256Hex(link);
    const ptr = await this.kv.get<string>(["claim_link", linkHash]);
    if (!ptr.value) return null;
    const entry = await this.kv.get<Claim>(["claim", ptr.value]);
    // A newer request replaced this attempt: the old link is dead.
    if (!entry.value?.attempt || entry.value.attempt.linkHash !== linkHash) return null;
    return { entry: entry as Deno.KvEntry<Claim>, claim: entry.value, hash: ptr.value };
  }

  // KV may drop a claim a day after it expires (expiry itself is checked on read).
  #keepMs(claim: Claim): number {
    return Math.max(Date.parse(claim.expiresAt) - this.clock.now().getTime(), 0) + 86_400_000;
  }

  /** `ttlS` from `now`, or the claim's own end when that comes first (ISO 8601). */
  #endsBy(claim: Claim, now: Date, ttlS: number): string {
    return new Date(Math.min(now.getTime() + ttlS * 1000, Date.parse(claim.expiresAt))).toISOString();
  }

  #past(iso: string): boolean {
    return Date.parse(iso) <= this.clock.now().getTime();
  }
}

/**
 * The verification e-mail: the claim page link and the one-time code that proves the reader
 * controls the mailbox. The code is in this message and nowhere else.
 */
function claimEmail(
  m: { to: string; sellerName: string; uri: string; mailCode: string; timeLeft: string },
): MailMessage {
  const code = formatUserCode(m.mailCode);
  return {
    to: m.to,
    subject: `Confirm the AI agent acting for you at ${m.sellerName}`,
    text: [
      `An AI agent asked to be linked to ${m.to} at ${m.sellerName}.`,
      "",
      `If that was you, open this link (it works for ${m.timeLeft}):`,
      m.uri,
      "",
      `and enter this verification code: ${code}`,
      "",
      "Do not share the verification code with anyone, not even your agent. After you confirm, the page shows a",
      "different code to give to your agent. If you did not ask for this, ignore this message.",
    ].join("\n"),
    html: String(
      html`<p>An AI agent asked to be linked to <b>${m.to}</b> at ${m.sellerName}.</p>
<p>If that was you, <a href="${m.uri}">open this link</a> (it works for ${m.timeLeft}) and enter this verification code:</p>
<p style="font:700 1.6rem monospace;letter-spacing:.15em" id="mail-code">${code}</p>
<p>Do not share the verification code with anyone, not even your agent. After you confirm, the page shows a
different code to give to your agent. If you did not ask for this, ignore this message.</p>`,
    ),
  };
}

/**
 * Time left as a person reads it, never more than there is: whole minutes rounded down ("1 minute",
 * "4 minutes"), "less than a minute" under one. A mail or page that rounded up promised a claim
 * link minutes it did not have.
 */
export function timeLeftText(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return "less than a minute";
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}
