/** When to poll a failing source again. */

/**
 * Seconds to wait after the `failures`-th failure in a row: the interval doubled per failure
 * (the first retry comes within one interval), capped at `maxS`, with "equal jitter" (half fixed,
 * half random) so processes and sources that failed together do not retry together. A
 * `Retry-After` from the origin is honoured when it asks for longer, up to the same cap.
 */
export function backoffSeconds(
  { intervalS, failures, maxS, retryAfterS, random }: {
    intervalS: number;
    failures: number;
    maxS: number;
    retryAfterS?: number;
    random: () => number;
  },
): number {
  const exp = Math.min(maxS, intervalS * 2 ** Math.min(Math.max(0, failures - 1), 30));
  const jittered = exp / 2 + (exp / 2) * random();
  return Math.min(maxS, Math.max(jittered, retryAfterS ?? 0));
}

/**
 * Reads `Retry-After` (RFC 9110: delay seconds or an HTTP date) as seconds from `now`;
 * undefined when absent or unreadable.
 */
export function retryAfterSeconds(value: string | null | undefined, now: Date): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const at = Date.parse(v);
  if (!Number.isFinite(at)) return undefined;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}
