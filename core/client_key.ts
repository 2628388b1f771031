import { sha256Hex } from "./crypto.ts";

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

/**
 * A pseudonymous key of the sender's network (16 hex digits of SHA-256), stored on widget events
 * so trending can count distinct senders without storing addresses. Undefined for non-IP addresses.
 * @example await clientKey("2001:db8:1:2:aaaa::1") === await clientKey("2001:db8:1:2::9") // same /64
 */
export async function clientKey(address: string): Promise<string | undefined> {
  const network = senderNetwork(address);
  return network === null ? undefined : (await sha256Hex(`sender:${network}`)).slice(0, 16);
}
