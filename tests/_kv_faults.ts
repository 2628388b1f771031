/**
 * A KV whose writes fail on demand, for partial-failure tests: `kvFaults()` gives a `wrap` for a
 * world's `wrapKv` and a `failNext(n, rule)` that makes the next `n` writes matching `rule` throw
 * (as KV does on a backend error), a plain `set`/`delete` or an atomic commit that holds such a
 * mutation alike. Everything else passes through unchanged.
 */

import { kvThrough } from "./_kv_proxy.ts";

/** Which write fails: a set or a delete of a key, and for sets optionally the value written. */
export interface KvFaultRule {
  op: "set" | "delete";
  /** The key's first part (its entity, e.g. `"commerce_payment"`). */
  entity: string;
  /** For sets: fails only when this holds for the value written. */
  value?: (v: unknown) => boolean;
}

/** The KV wrapper and its switch. */
export function kvFaults() {
  let left = 0;
  let rule: KvFaultRule | null = null;
  const hits = (op: "set" | "delete", key: Deno.KvKey, value?: unknown) =>
    left > 0 && rule !== null && rule.op === op && key[0] === rule.entity &&
    (op === "delete" || !rule.value || rule.value(value));
  const fail = () => {
    left--;
    return Promise.reject(new Error("KV write failed (injected)"));
  };

  const wrap = (kv: Deno.Kv): Deno.Kv =>
    kvThrough(kv, {
      set: (key, value, _options, real) => hits("set", key, value) ? fail() : real(),
      delete: (key, real) => hits("delete", key) ? fail() : real(),
      atomic: () => {
        let doomed = false;
        return {
          set: (key, value) => void (doomed ||= hits("set", key, value)),
          delete: (key) => void (doomed ||= hits("delete", key)),
          commit: (real) => doomed ? fail() : real(),
        };
      },
    });

  return {
    wrap,
    /** The next `n` writes matching `r` throw. */
    failNext(n: number, r: KvFaultRule): void {
      left = n;
      rule = r;
    },
    /** Injected failures not yet used. */
    get left(): number {
      return left;
    },
  };
}
