/**
 * The one in-memory cache shape of the service: at most `max` entries, least recently used out
 * first, optionally each for a limited time. Backed by `lru-cache`.
 */
import { LRUCache } from "lru-cache";

export type { LRUCache };

/** Options of {@link boundedCache}. */
export interface BoundedCacheOptions<K = unknown, V = unknown> {
  /** Most entries kept; past it the least recently used one goes. */
  max: number;
  /** Default lifetime of an entry in ms; absent or 0: until evicted. `set(k, v, { ttl })` overrides it. */
  ttlMs?: number;
  /**
   * The milliseconds clock lifetimes are measured on, read at each access (an injected
   * `Clock`'s `() => clock.now().getTime()`, or `() => performance.now()`, the default). Its
   * readings must be positive: lru-cache takes a start time of 0 as "no lifetime".
   */
  now?: () => number;
  /** Most total size of the entries (with `sizeOf`); past it the least recently used ones go. */
  maxSize?: number;
  /** The size of an entry (a positive integer), counted against `maxSize`. */
  sizeOf?: (value: V, key: K) => number;
}

/**
 * A bounded LRU map. Lifetimes are checked when an entry is read: no timers run, so tests that
 * move an injected clock see entries expire, and nothing keeps the process alive. An entry is
 * fresh until more than its lifetime has passed (at exactly `ttlMs` it is still served).
 *
 * @example
 * ```ts
 * const sellers = boundedCache<string, { seller: Seller | null }>({ max: 1000, ttlMs: 5000, now: () => performance.now() });
 * sellers.set("shop.example", { seller });
 * sellers.get("shop.example"); // undefined once 5 s have passed
 * ```
 */
export function boundedCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(
  { max, ttlMs, now, maxSize, sizeOf }: BoundedCacheOptions<K, V>,
): LRUCache<K, V> {
  if (!(Number.isInteger(max) && max > 0)) throw new RangeError("boundedCache() needs a positive integer max");
  return new LRUCache<K, V>({
    // lru-cache allocates `max` slots up front (a cache of 10,000 took about 1 ms of CPU to build, and
    // the service builds dozens): bounded by count alone, each entry counts 1 against a `maxSize` of
    // `max` instead, and its storage grows with its entries. Same bound, same order of eviction.
    ...(maxSize && sizeOf
      ? { max, maxSize, sizeCalculation: (v: V, k: K) => Math.max(1, Math.ceil(sizeOf(v, k))) }
      : { maxSize: max, sizeCalculation: () => 1 }),
    ...(ttlMs ? { ttl: ttlMs } : {}),
    // lru-cache memoises its clock for `ttlResolution` ms with a timer; read it every time instead.
    ttlResolution: 0,
    ...(now ? { perf: { now } } : {}),
  });
}
