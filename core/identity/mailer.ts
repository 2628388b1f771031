import type { Clock } from "../clock.ts";
import { base64url, randomBytes } from "../crypto.ts";
import { lazily } from "../lazily.ts";
import { isLoopbackHost } from "../trusted_url.ts";

/** One outgoing e-mail. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/** Sends e-mail. The SMTP mailer is the real one; the outbox keeps mail in KV for the embedded demo. */
export interface Mailer {
  readonly kind: "smtp" | "outbox" | "none";
  /** @throws Error when the message could not be handed over (the caller answers 503). */
  send(message: MailMessage): Promise<void>;
  /** Releases pooled connections, if any. */
  close?(): void;
}

/**
 * nodemailer's transport options for `smtpUrl` (`smtp://user:pass@host:port` or `smtps://...`).
 * `smtp://` to any host but this machine must upgrade with STARTTLS or send nothing: nodemailer
 * upgrades only when the server offers it, so whoever sits on the path and strips the offer read
 * the relay's password and every claim mail's verification code in clear text.
 */
export function smtpTransportOptions(smtpUrl: string) {
  const url = new URL(smtpUrl);
  const secure = url.protocol === "smtps:";
  return {
    host: url.hostname,
    port: Number(url.port) || (secure ? 465 : 587),
    secure,
    requireTLS: !secure && !isLoopbackHost(url.hostname.toLowerCase()),
    auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
    pool: true,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  };
}

/** SMTP through nodemailer, with the options of {@link smtpTransportOptions}. */
export class SmtpMailer implements Mailer {
  readonly kind = "smtp" as const;
  /** nodemailer's transport, made on the first send: a process that sends no mail does not load nodemailer. */
  // deno-lint-ignore no-explicit-any
  readonly #transport: () => Promise<any>;
  // deno-lint-ignore no-explicit-any
  #made: any;

  constructor(smtpUrl: string, private readonly from: string) {
    // Pooled connections; no connection is opened until the first send.
    const options = smtpTransportOptions(smtpUrl);
    this.#transport = lazily(async () => this.#made = (await import("nodemailer")).default.createTransport(options));
  }

  async send(m: MailMessage): Promise<void> {
    const transport = await this.#transport();
    await transport.sendMail({ from: this.from, to: m.to, subject: m.subject, text: m.text, html: m.html });
  }

  /** Closes pooled connections. */
  close(): void {
    this.#made?.close();
  }
}

/** No mail transport is configured: every send fails (claims answer 503 `mail_unavailable`). */
export class NoMailer implements Mailer {
  readonly kind = "none" as const;

  send(): Promise<void> {
    return Promise.reject(new Error("no mail transport: set SMTP_URL (or MAIL_OUTBOX=true for a local demo)"));
  }
}

/** A message kept by the {@link OutboxMailer}. */
export interface OutboxEntry extends MailMessage {
  id: string;
  from: string;
  sentAt: string;
}

// Outbox mail is a convenience for the local demo; it is dropped after a day.
const OUTBOX_TTL_MS = 86_400_000;

/**
 * Keeps mail in KV (`["outbox", sentAtMs, id]`) instead of sending it; listed at `/dev/outbox` to
 * an operator key only. Claim e-mails carry the secret that proves mailbox control, so the outbox
 * is off unless MAIL_OUTBOX is set.
 */
export class OutboxMailer implements Mailer {
  readonly kind = "outbox" as const;

  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock, private readonly from: string) {}

  async send(m: MailMessage): Promise<void> {
    const now = this.clock.now();
    const entry: OutboxEntry = { ...m, id: base64url(randomBytes(9)), from: this.from, sentAt: now.toISOString() };
    await this.kv.set(["outbox", now.getTime(), entry.id], entry, { expireIn: OUTBOX_TTL_MS });
  }

  /** The newest messages first. */
  async list(limit = 50): Promise<OutboxEntry[]> {
    const out: OutboxEntry[] = [];
    for await (const e of this.kv.list<OutboxEntry>({ prefix: ["outbox"] }, { reverse: true, limit })) {
      out.push(e.value);
    }
    return out;
  }
}
