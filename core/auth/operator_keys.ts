import type { Clock } from "../clock.ts";
import { base64url, randomBytes, sha256Hex } from "../crypto.ts";
import { newId } from "../ids.ts";

/** A stored operator key: only the SHA-256 of the secret is kept. */
export interface OperatorKeyRecord {
  id: string;
  name: string;
  createdAt: string;
  /** Set by {@link OperatorKeys.revoke}: the key opens nothing from then on. */
  revokedAt?: string;
}

const KEY_PREFIX = "op_";
// 32 random bytes: a lookup by hash leaks nothing a constant-time compare would hide.
const KEY_RE = /^op_[A-Za-z0-9_-]{43}$/;

/**
 * Operator keys: the credential of whoever runs the service (not a tenant). They guard operator
 * pages and counters such as the mail outbox and `/payproxy/metrics`. `op_` + 43 base64url
 * characters, shown once at creation, stored as SHA-256 under `["operator_key", hash]`. A leaked
 * key is taken back with {@link revoke} (`deno task admin operator-key revoke --id opk_...`).
 */
export class OperatorKeys {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  /** Creates a key. The returned `key` is never retrievable again. */
  async create(name = "operator"): Promise<{ key: string; record: OperatorKeyRecord }> {
    const key = KEY_PREFIX + base64url(randomBytes(32));
    const record: OperatorKeyRecord = {
      id: newId("opk", this.clock),
      name,
      createdAt: this.clock.now().toISOString(),
    };
    await this.kv.set(["operator_key", await sha256Hex(key)], record);
    return { key, record };
  }

  /** Every operator key, revoked ones included, without secrets (operator keys are a handful). */
  async list(): Promise<OperatorKeyRecord[]> {
    const out: OperatorKeyRecord[] = [];
    for await (const e of this.kv.list<OperatorKeyRecord>({ prefix: ["operator_key"] })) out.push(e.value);
    return out;
  }

  /** Revokes a key by id; false when no such key exists. Idempotent. */
  async revoke(id: string): Promise<boolean> {
    for await (const e of this.kv.list<OperatorKeyRecord>({ prefix: ["operator_key"] })) {
      if (e.value.id !== id) continue;
      if (e.value.revokedAt) return true;
      const res = await this.kv.atomic().check(e).set(e.key, { ...e.value, revokedAt: this.clock.now().toISOString() })
        .commit();
      return res.ok ? true : this.revoke(id);
    }
    return false;
  }

  /**
   * Whether an `Authorization` header carries a known operator key (`Bearer op_...`) not revoked.
   * @returns the key's record, or null.
   */
  async authenticate(authorization: string | undefined): Promise<OperatorKeyRecord | null> {
    const m = /^Bearer (\S+)$/i.exec(authorization ?? "");
    if (!m || !KEY_RE.test(m[1]!)) return null;
    const record = (await this.kv.get<OperatorKeyRecord>(["operator_key", await sha256Hex(m[1]!)])).value;
    return record && !record.revokedAt ? record : null;
  }
}
