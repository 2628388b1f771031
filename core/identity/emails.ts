// A pragmatic address check: one @, a dot-atom local part, a domain of dot-separated labels with a TLD.
// It is not RFC 5322 (quoted local parts are refused on purpose); it is what mail providers accept.
const EMAIL_RE =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

/** Whether `value` is an e-mail address we can send to (at most 254 characters). */
export function isEmail(value: unknown): value is string {
  return typeof value === "string" && value.length <= 254 && EMAIL_RE.test(value);
}

/** The form addresses are stored and compared in: lowercased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Whether the local part carries a `+tag` alias (refused at claim time, spec 5.3). */
export function isPlusAliased(email: string): boolean {
  return email.slice(0, email.lastIndexOf("@")).includes("+");
}

// Providers that deliver every dotted spelling of a local part to one mailbox.
const DOTLESS_DOMAINS = new Map([["gmail.com", "gmail.com"], ["googlemail.com", "gmail.com"]]);

/**
 * The mailbox an address delivers to, for limits per recipient: lowercased, and for providers that
 * ignore dots in the local part (Gmail) without them, so `v.ictim@gmail.com` counts as `victim@gmail.com`.
 * @example mailboxKey("V.Ictim@GoogleMail.com") // "victim@gmail.com"
 */
export function mailboxKey(email: string): string {
  const normal = normalizeEmail(email);
  const at = normal.lastIndexOf("@");
  const domain = DOTLESS_DOMAINS.get(normal.slice(at + 1));
  return domain ? `${normal.slice(0, at).replaceAll(".", "")}@${domain}` : normal;
}
