/**
 * The one way tests wrap a Deno KV: {@link kvThrough} passes every call through to the real KV
 * except where a hook steps in, and wraps each atomic operation so its hooks see what it holds.
 * The fault, write-recording, read-counting and race helpers are each a few hooks on it.
 */

/** A real call, as the wrapped KV would have made it. */
type Real<T> = () => Promise<T>;

/** Hooks of one atomic operation: its mutations are seen (and still made), its commit may be replaced. */
export interface AtomicHooks {
  set?(key: Deno.KvKey, value: unknown, options?: { expireIn?: number }): void;
  sum?(key: Deno.KvKey, n: bigint): void;
  delete?(key: Deno.KvKey): void;
  commit?(real: Real<Deno.KvCommitResult | Deno.KvCommitError>): Promise<Deno.KvCommitResult | Deno.KvCommitError>;
}

/** Hooks of a KV; each gets the call's arguments and the real call, which it may make or not. */
export interface KvHooks {
  get?(key: Deno.KvKey, real: Real<Deno.KvEntryMaybe<unknown>>): Promise<Deno.KvEntryMaybe<unknown>>;
  getMany?(keys: Deno.KvKey[], real: Real<Deno.KvEntryMaybe<unknown>[]>): Promise<Deno.KvEntryMaybe<unknown>[]>;
  /** Sees each entry a `list` yields (the listing itself goes through). */
  listed?(entry: Deno.KvEntry<unknown>): void;
  set?(
    key: Deno.KvKey,
    value: unknown,
    options: { expireIn?: number } | undefined,
    real: Real<Deno.KvCommitResult>,
  ): Promise<Deno.KvCommitResult>;
  delete?(key: Deno.KvKey, real: Real<void>): Promise<void>;
  /** Called once per `kv.atomic()`: the hooks of that operation (so each may keep its own state). */
  atomic?(): AtomicHooks;
}

/** `kv` with `hooks` in the way of the calls they name; everything else goes straight through. */
export function kvThrough(kv: Deno.Kv, hooks: KvHooks): Deno.Kv {
  const wrapAtomic = (op: Deno.AtomicOperation, h: AtomicHooks): Deno.AtomicOperation => {
    const wrapped: Deno.AtomicOperation = new Proxy(op, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target);
        if (typeof v !== "function") return v;
        if (prop === "commit" && h.commit) return () => h.commit!(() => target.commit());
        return (...args: unknown[]) => {
          if (prop === "set") h.set?.(args[0] as Deno.KvKey, args[1], args[2] as { expireIn?: number } | undefined);
          if (prop === "sum") h.sum?.(args[0] as Deno.KvKey, args[1] as bigint);
          if (prop === "delete") h.delete?.(args[0] as Deno.KvKey);
          const out = v.apply(target, args);
          return out === target ? wrapped : out;
        };
      },
    });
    return wrapped;
  };
  return new Proxy(kv, {
    get(target, prop) {
      if (prop === "get" && hooks.get) {
        return (key: Deno.KvKey, options?: { consistency?: Deno.KvConsistencyLevel }) =>
          hooks.get!(key, () => target.get(key, options));
      }
      if (prop === "getMany" && hooks.getMany) {
        return (keys: Deno.KvKey[], options?: { consistency?: Deno.KvConsistencyLevel }) =>
          hooks.getMany!(keys, () => target.getMany(keys, options));
      }
      if (prop === "list" && hooks.listed) {
        return async function* (selector: Deno.KvListSelector, options?: Deno.KvListOptions) {
          for await (const e of target.list(selector, options)) {
            hooks.listed!(e);
            yield e;
          }
        };
      }
      if (prop === "set" && hooks.set) {
        return (key: Deno.KvKey, value: unknown, options?: { expireIn?: number }) =>
          hooks.set!(key, value, options, () => target.set(key, value, options));
      }
      if (prop === "delete" && hooks.delete) return (key: Deno.KvKey) => hooks.delete!(key, () => target.delete(key));
      if (prop === "atomic" && hooks.atomic) return () => wrapAtomic(target.atomic(), hooks.atomic!());
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

/** `kv` counting its `get` calls in `reads.n`. */
export function readCounting(kv: Deno.Kv, reads: { n: number }): Deno.Kv {
  return kvThrough(kv, {
    get: (_key, real) => {
      reads.n++;
      return real();
    },
  });
}

/** What a KV was asked to read: calls (`get`, `getMany`, each `list`ed entry), entries found, their value bytes. */
export interface ReadVolume {
  reads: number;
  entries: number;
  bytes: number;
}

/** `kv` adding up in `volume` every read made through it (binary values by length, others as JSON). */
export function readVolumeCounting(kv: Deno.Kv, volume: ReadVolume): Deno.Kv {
  const count = (e: Deno.KvEntryMaybe<unknown>) => {
    if (e.versionstamp === null) return;
    volume.entries++;
    const v = e.value;
    volume.bytes += v instanceof Uint8Array
      ? v.byteLength
      : v instanceof Deno.KvU64
      ? 8
      : (JSON.stringify(v) ?? "").length;
  };
  return kvThrough(kv, {
    get: async (_key, real) => {
      volume.reads++;
      const e = await real();
      count(e);
      return e;
    },
    getMany: async (_keys, real) => {
      volume.reads++;
      const got = await real();
      got.forEach(count);
      return got;
    },
    listed: (e) => {
      volume.reads++;
      count(e);
    },
  });
}
