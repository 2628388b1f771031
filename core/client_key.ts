import { base64url, fromBase64url, HmacSha256, randomBytes } from "./crypto.ts";
import { lazily } from "./lazily.ts";

/**
 * The network a client address stands for when counting distinct senders: an IPv4 address as
 * is, an IPv6 address as its /64 (one subscriber usually holds a whole /64, so its addresses are
 * one sender). Null when the address is not an IP address.
 */
export function senderNetwork(address: string): string | null {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) return address;
  const v6 = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "").toLowerCase();
  if (!/^[0-9a-f:.]+$/.test(v6) || !v6.includes(":")) return null;
  // An IPv4-mapped address (::ffff:1.2.3.4) is that IPv4 sender.
  const mapped = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/.exec(v6);
  if (mapped) return mapped[1]!;
  const [head, tail] = v6.split("::") as [string, string | undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined
    ? left
    : [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  if (groups.length < 4) return null;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

// The HMAC key of sender keys: made once per store, never rotated (a new key would count every
// sender of the trending window twice), read by every process.
const SECRET_KEY: Deno.KvKey = ["client_key_secret"];

/**
 * Pseudonymous keys of senders' networks (16 hex digits of an HMAC-SHA256 under a key kept in KV),
 * stored on widget events and clicks so trending can count distinct senders without storing
 * addresses. Keyed, because an unkeyed hash of an IPv4 address is reversed by trying all 2^32: whoever
 * reads the events (a Parquet file, a backup) would have had every reader's address.
 */
export class ClientKeys {
  // Loaded once; a failed load is tried again on the next call.
  readonly #mac = lazily(() => this.#load());
  constructor(private readonly kv: Deno.Kv) {}

  /**
   * The key of `address`'s network; undefined for non-IP addresses.
   * @example await keys.of("2001:db8:1:2:aaaa::1") === await keys.of("2001:db8:1:2::9") // same /64
   */
  async of(address: string): Promise<string | undefined> {
    const network = senderNetwork(address);
    if (network === null) return undefined;
    return (await this.#mac()).digest(`sender:${network}`).toString("hex").slice(0, 16);
  }

  /**
   * The `event_id` of the `query` event of one widget answer, whoever records it: the service (its
   * reader left at the last moment) or the widget (it received the answer, and sends the answer's
   * `request_id` with its event). Both copies then carry one id and the pipeline stores it once.
   * Keyed, so a page cannot make the id of another reader's question (it would need that reader's
   * request id and session id, and the key) and have its own event stored in that question's place.
   */
  async answerEventId(widgetId: string, sessionId: string | undefined, requestId: string): Promise<string> {
    const mac = (await this.#mac()).digest(`answer:${widgetId}\u0000${sessionId ?? ""}\u0000${requestId}`);
    return `q_${mac.toString("hex").slice(0, 32)}`;
  }

  /** The store's key, made by the first process that needs it. */
  async #load(): Promise<HmacSha256> {
    for (;;) {
      const got = await this.kv.get<string>(SECRET_KEY);
      if (got.value) return new HmacSha256(fromBase64url(got.value));
      const made = base64url(randomBytes(32));
      const res = await this.kv.atomic().check(got).set(SECRET_KEY, made).commit();
      if (res.ok) return new HmacSha256(fromBase64url(made));
    }
  }
}
