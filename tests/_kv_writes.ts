/**
 * A Deno KV that remembers, for every key written through it, whether its last write asked KV to
 * drop it (`expireIn`). A `:memory:` KV never shows an expiry (expired entries stay readable until
 * KV's own sweep runs, on the wall clock), so tests of "nothing an outsider writes is kept forever"
 * read the lifetimes asked for here instead.
 */

import { kvThrough } from "./_kv_proxy.ts";

/** The last write of one key. */
export interface KvWrite {
  key: Deno.KvKey;
  /** Milliseconds KV was asked to keep it; undefined: kept until deleted. */
  expireIn?: number;
}

/** A recording KV and what it saw. */
export interface KvWrites {
  kv: Deno.Kv;
  /** The last write of each key since the last {@link KvWrites.reset}. */
  writes(): KvWrite[];
  /** Forgets what was seen (e.g. after seeding the world). */
  reset(): void;
}

/** Wraps `kv` so `set` and atomic `set`/`sum` are recorded; everything else passes through. */
export function recordKvWrites(kv: Deno.Kv): KvWrites {
  let seen = new Map<string, KvWrite>();
  const note = (key: Deno.KvKey, options?: { expireIn?: number }) => {
    seen.set(JSON.stringify(key, (_k, v) => typeof v === "bigint" ? `${v}n` : v), {
      key,
      ...(options?.expireIn ? { expireIn: options.expireIn } : {}),
    });
  };
  const recording = kvThrough(kv, {
    set: (key, _value, options, real) => {
      note(key, options);
      return real();
    },
    atomic: () => ({ set: (key, _value, options) => note(key, options), sum: (key) => note(key) }),
  });
  return { kv: recording, writes: () => [...seen.values()], reset: () => (seen = new Map()) };
}

/** The keys among `writes` that KV keeps for good, as `prefix` names (sorted, once each). */
export function keptForGood(writes: KvWrite[]): string[] {
  return [...new Set(writes.filter((w) => w.expireIn === undefined).map((w) => String(w.key[0])))].sort();
}
