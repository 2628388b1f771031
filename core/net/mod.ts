/** The net room's face: what other rooms and the routes may use. */

export { parseIPv4, parseIPv6 } from "./ip.ts";
export { Loopback } from "./loopback.ts";
export { SafeFetcher, SafeFetchError, type SafeFetchOptions, type SafeFetchResult } from "./safe_fetch.ts";
