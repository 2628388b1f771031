/**
 * IP address parsing and classification for the SSRF guard. Pure functions, no I/O.
 */

/** Why an address is refused; `null` from a policy means "allowed". */
export type BlockReason =
  | "unspecified"
  | "loopback"
  | "private"
  | "shared"
  | "link_local"
  | "multicast"
  | "reserved"
  | "documentation"
  | "unique_local"
  | "not_an_ip";

/** Parses a dotted-quad IPv4 address into its four bytes, or `null`. Strict: four decimal parts. */
export function parseIPv4(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p[0] === "0")) return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out;
}

/** Parses an IPv6 address (optionally in brackets, with an embedded IPv4 tail) into 16 bytes, or `null`. */
export function parseIPv6(text: string): number[] | null {
  let s = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (s.includes("%")) s = s.slice(0, s.indexOf("%")); // zone id: irrelevant to the class
  if (!s.includes(":")) return null;
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    const v4 = parseIPv4(s.slice(lastColon + 1));
    if (!v4) return null;
    tail = v4;
    s = s.slice(0, lastColon + 1) + "0:0"; // placeholder groups, replaced below
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const total = head.length + rest.length;
  if (halves.length === 1 ? total !== 8 : total > 7) return null;
  const all = [...head, ...Array(8 - total).fill("0"), ...rest];
  const bytes: number[] = [];
  for (const g of all) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    const n = parseInt(g, 16);
    bytes.push(n >> 8, n & 0xff);
  }
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

const inV4 = (b: number[], net: [number, number, number, number], bits: number): boolean => {
  for (let i = 0; i < 4; i++) {
    const take = Math.max(0, Math.min(8, bits - i * 8));
    if (take === 0) return true;
    const mask = (0xff << (8 - take)) & 0xff;
    if ((b[i]! & mask) !== (net[i]! & mask)) return false;
  }
  return true;
};

/** Classifies IPv4 bytes: `null` for a public unicast address, else why it is special. */
export function classifyIPv4(b: number[]): BlockReason | null {
  if (inV4(b, [0, 0, 0, 0], 8)) return "unspecified"; // "this network", incl. 0.0.0.0
  if (inV4(b, [127, 0, 0, 0], 8)) return "loopback";
  if (inV4(b, [10, 0, 0, 0], 8) || inV4(b, [172, 16, 0, 0], 12) || inV4(b, [192, 168, 0, 0], 16)) return "private";
  if (inV4(b, [100, 64, 0, 0], 10)) return "shared"; // carrier-grade NAT
  if (inV4(b, [169, 254, 0, 0], 16)) return "link_local"; // incl. cloud metadata 169.254.169.254
  if (inV4(b, [192, 0, 0, 0], 24) || inV4(b, [198, 18, 0, 0], 15)) return "reserved";
  if (inV4(b, [192, 0, 2, 0], 24) || inV4(b, [198, 51, 100, 0], 24) || inV4(b, [203, 0, 113, 0], 24)) {
    return "documentation";
  }
  if (inV4(b, [224, 0, 0, 0], 4)) return "multicast";
  if (inV4(b, [240, 0, 0, 0], 4)) return "reserved"; // incl. broadcast 255.255.255.255
  return null;
}

/** Classifies IPv6 bytes; IPv4 embedded by mapping, compatibility, NAT64 or 6to4 is judged as IPv4. */
export function classifyIPv6(b: number[]): BlockReason | null {
  const zeroTo = (n: number) => b.slice(0, n).every((x) => x === 0);
  if (zeroTo(16)) return "unspecified";
  if (zeroTo(15) && b[15] === 1) return "loopback";
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (deprecated compatible): the IPv4 decides.
  if (zeroTo(10) && b[10] === 0xff && b[11] === 0xff) return classifyIPv4(b.slice(12));
  if (zeroTo(12)) return classifyIPv4(b.slice(12));
  // 64:ff9b::/96 NAT64 well-known prefix.
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && b.slice(4, 12).every((x) => x === 0)) {
    return classifyIPv4(b.slice(12));
  }
  if (b[0] === 0x20 && b[1] === 0x02) return classifyIPv4(b.slice(2, 6)); // 2002::/16 6to4
  if ((b[0]! & 0xfe) === 0xfc) return "unique_local"; // fc00::/7
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return "link_local"; // fe80::/10
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return "private"; // fec0::/10 (deprecated site-local)
  if (b[0] === 0xff) return "multicast";
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x0d && b[3] === 0xb8) return "documentation"; // 2001:db8::/32
  if (b[0] === 0x01 && b.slice(1, 8).every((x) => x === 0)) return "reserved"; // 100::/64 discard
  if ((b[0]! & 0xe0) !== 0x20) return "reserved"; // outside 2000::/3, the global unicast space
  return null;
}

/** Classifies an IPv4 or IPv6 literal; `not_an_ip` when it is neither. */
export function classifyIp(ip: string): BlockReason | null {
  const v4 = parseIPv4(ip);
  if (v4) return classifyIPv4(v4);
  const v6 = parseIPv6(ip);
  if (v6) return classifyIPv6(v6);
  return "not_an_ip";
}

/** True when `host` is an IP literal (IPv6 with or without brackets). */
export function isIpLiteral(host: string): boolean {
  return parseIPv4(host) !== null || parseIPv6(host) !== null;
}

/** Decides whether the guard may connect to an address: `null` allows, a reason refuses. */
export type AddressPolicy = (ip: string) => BlockReason | null;

/** Classes `ALLOW_PRIVATE_URLS` opens: what a test or demo on one machine or a LAN needs, nothing more. */
const OPENED_BY_ALLOW_PRIVATE: ReadonlySet<BlockReason> = new Set(["loopback", "private", "shared", "unique_local"]);

/**
 * The default address policy: only public unicast addresses. With `allowPrivate`, loopback, RFC 1918,
 * CGNAT and unique-local addresses pass too; link-local (where cloud metadata lives), unspecified,
 * multicast and reserved addresses never do.
 */
export function addressPolicy({ allowPrivate = false }: { allowPrivate?: boolean } = {}): AddressPolicy {
  return (ip) => {
    const reason = classifyIp(ip);
    if (reason === null) return null;
    if (allowPrivate && OPENED_BY_ALLOW_PRIVATE.has(reason)) return null;
    return reason;
  };
}
