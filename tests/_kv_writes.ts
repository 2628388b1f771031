/**
 * A Deno KV that remembers, for every key written through it, whether its last write asked KV to
 * drop it (`expireIn`). A `:memory:` KV never shows an expiry (expired entries stay readable until
 * KV's own sweep runs, on the wall clock), so tests of "nothing an outsider writes is kept forever"
 * read the lifetimes asked for here instead.
 */

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
  const atomic = (): Deno.AtomicOperation => {
    const op = kv.atomic();
    const wrapped: Deno.AtomicOperation = new Proxy(op, {
      get(target, prop) {
        if (prop === "set") {
          return (key: Deno.KvKey, value: unknown, options?: { expireIn?: number }) => {
            note(key, options);
            target.set(key, value, options);
            return wrapped;
          };
        }
        if (prop === "sum") {
          return (key: Deno.KvKey, n: bigint) => {
            note(key);
            target.sum(key, n);
            return wrapped;
          };
        }
        const v = Reflect.get(target, prop, target);
        if (typeof v !== "function") return v;
        return (...args: unknown[]) => {
          const out = v.apply(target, args);
          return out === target ? wrapped : out;
        };
      },
    });
    return wrapped;
  };
  const recording = new Proxy(kv, {
    get(target, prop) {
      if (prop === "set") {
        return (key: Deno.KvKey, value: unknown, options?: { expireIn?: number }) => {
          note(key, options);
          return target.set(key, value, options);
        };
      }
      if (prop === "atomic") return atomic;
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return { kv: recording, writes: () => [...seen.values()], reset: () => (seen = new Map()) };
}

/** The keys among `writes` that KV keeps for good, as `prefix` names (sorted, once each). */
export function keptForGood(writes: KvWrite[]): string[] {
  return [...new Set(writes.filter((w) => w.expireIn === undefined).map((w) => String(w.key[0])))].sort();
}
