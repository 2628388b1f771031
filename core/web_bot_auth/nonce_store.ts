/**
 * mppx's `AtomicStore` over Deno KV, for the replay protection of Web Bot Auth signatures: each
 * `(keyid, nonce)` is claimed once, atomically, until the signature expires, in every process
 * that shares the KV. Keys: `["web_bot_auth_nonce", key]` -> value.
 */
import type { Store } from "mppx";

const PREFIX = "web_bot_auth_nonce";
type Marker = { expires: number };

/**
 * The store.
 * @param now milliseconds on the clock the signatures' `expires` is measured on: mppx's verifier
 * checks `created`/`expires` against the wall clock, so the caller passes that clock here.
 */
export function kvNonceStore(kv: Deno.Kv, now: () => number): Store.AtomicStore {
  const key = (k: string): Deno.KvKey => [PREFIX, k];
  const keep = (expires: number) => ({ expireIn: Math.max(expires - now(), 0) + 60_000 });
  return {
    async get(k) {
      return (await kv.get(key(k))).value ?? null;
    },
    async put(k, value) {
      await kv.set(key(k), value);
    },
    async delete(k) {
      await kv.delete(key(k));
    },
    async update(k, fn) {
      for (let i = 0; i < 16; i++) {
        const entry = await kv.get(key(k));
        const change = fn(entry.value ?? null);
        if (change.op === "noop") return change.result;
        const op = kv.atomic().check(entry);
        if (change.op === "set") op.set(key(k), change.value);
        else op.delete(key(k));
        if ((await op.commit()).ok) return change.result;
      }
      throw new Error("nonce store update kept conflicting");
    },
    /** First use of `k` until `expires` (ms): true once; false while an unexpired claim exists. */
    async tryClaim(k, expires) {
      for (let i = 0; i < 16; i++) {
        const entry = await kv.get<Marker>(key(k));
        // KV drops expired keys lazily: an expired marker is free to claim again.
        if (entry.value && entry.value.expires > now()) return false;
        const res = await kv.atomic().check(entry).set(key(k), { expires } satisfies Marker, keep(expires)).commit();
        if (res.ok) return true;
      }
      return false;
    },
  } as Store.AtomicStore;
}
