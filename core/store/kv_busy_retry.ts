/**
 * Deno KV on a local SQLite file shared by several processes (the cluster on one machine,
 * docs/operations.md): SQLite lets one writer at a time, and the KV backend surfaces a write that
 * meets another process's lock as `TypeError: database is locked` at once, without waiting. Measured
 * with two processes and 20 concurrent paid calls: 4 of 20 failed with 500.
 *
 * {@link retryBusyKv} wraps a `Deno.Kv` so that point operations meeting that lock wait a little and
 * retry. A busy SQLite write is never applied (its transaction could not start), so a retried atomic
 * commit is the same single commit: its checks are evaluated again, so money and single-use moves
 * stay exact. `list()` iterators are left alone (reads do not take the write lock in WAL mode).
 */

/** Retries of one operation, and the first pause (doubled each time, with jitter). */
const MAX_ATTEMPTS = 12;
const FIRST_PAUSE_MS = 2;
const MAX_PAUSE_MS = 200;

/** Whether `err` is SQLite's busy lock, as the KV backend reports it. */
export function isBusy(err: unknown): boolean {
  return err instanceof Error && /database is locked|database table is locked|SQLITE_BUSY/i.test(err.message);
}

/** Runs `op`, retrying while it fails with {@link isBusy}; any other error, or the last busy one, is thrown. */
export async function retryBusy<T>(op: () => Promise<T>): Promise<T> {
  let pause = FIRST_PAUSE_MS;
  for (let attempt = 1;; attempt++) {
    try {
      return await op();
    } catch (err) {
      if (!isBusy(err) || attempt >= MAX_ATTEMPTS) throw err;
      await new Promise((r) => setTimeout(r, pause * (0.5 + Math.random())));
      pause = Math.min(pause * 2, MAX_PAUSE_MS);
    }
  }
}

/**
 * Runs a write that records what already happened (money moved, a result to keep) up to `tries`
 * times on any error, at once: such a write must not be lost to one failed commit, and a failed
 * commit was not applied. The last error is thrown.
 */
export async function retryWrite<T>(op: () => Promise<T>, tries = 3): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await op();
    } catch (err) {
      if (attempt >= tries) throw err;
    }
  }
}

const RETRIED = new Set(["get", "getMany", "set", "delete", "enqueue"]);

/** The atomic operation with `commit()` retried; builder calls return the wrapper for chaining. */
function wrapAtomic(op: Deno.AtomicOperation): Deno.AtomicOperation {
  const proxy: Deno.AtomicOperation = new Proxy(op, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "commit") return () => retryBusy(() => target.commit());
      return (...args: unknown[]) => {
        const out = value.apply(target, args);
        return out === target ? proxy : out;
      };
    },
  });
  return proxy;
}

/**
 * `kv` with busy-lock retries on `get`, `getMany`, `set`, `delete`, `enqueue` and atomic commits.
 * Harmless on `:memory:` and KV Connect (their errors are never "database is locked").
 */
export function retryBusyKv(kv: Deno.Kv): Deno.Kv {
  return new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "atomic") return () => wrapAtomic(target.atomic());
      if (typeof prop === "string" && RETRIED.has(prop)) {
        return (...args: unknown[]) => retryBusy(() => value.apply(target, args));
      }
      return value.bind(target);
    },
  });
}
