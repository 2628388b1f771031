import { z } from "zod";

/**
 * A configured URL that vouches for identities or money (an identity provider's key set, a chain
 * node, a payment facilitator, Stripe's API): `https:`, or `http:` only to this machine (tests, a
 * local chain). Over plain http to another host, whoever is on the path answers in its place.
 * Trailing slashes are dropped. The error names the variable, never the value.
 */
export const trustedUrl = (name: string) =>
  z.string().refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === "https:" || (u.protocol === "http:" && isLoopbackHost(u.hostname));
    } catch {
      return false;
    }
  }, { error: `${name} must be an absolute https URL (http only to this machine)` }).transform((v) =>
    v.replace(/\/+$/, "")
  );

/**
 * Whether a URL's host can only mean this machine: `localhost`, `127.x.x.x` or `[::1]`. The URL
 * parser normalises http(s) hosts (`LOCALHOST` -> `localhost`, `0x7f.1` -> `127.0.0.1`); other
 * schemes keep the host as written, so lower-case it first and take anything else as remote.
 */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || /^127(\.\d{1,3}){3}$/.test(hostname) || hostname === "[::1]";
}
