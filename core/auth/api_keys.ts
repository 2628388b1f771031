import type { Clock } from "../clock.ts";
import { base64url, randomBytes, sha256Hex } from "../crypto.ts";
import { authErrors } from "./errors.ts";
import { newId } from "../ids.ts";

/** A stored API key: only the SHA-256 of the secret is kept. */
export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  name: string;
  /** First characters of the key, to tell keys apart in listings. */
  preview: string;
  hash: string;
  createdAt: string;
  revokedAt?: string;
}

const KEY_PREFIX = "ak_";
// 32 random bytes: a hash lookup is as good as a constant-time compare, as the hash leaks nothing.
const KEY_RE = /^ak_[A-Za-z0-9_-]{43}$/;

/**
 * API keys: `ak_` + 43 base64url characters, shown once at creation, stored as SHA-256.
 * KV: `["api_key", hash]` -> record, `["api_key_by_tenant", tenantId, id]` -> hash,
 * `["api_key_id", id]` -> hash.
 */
export class ApiKeyService {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  /** Creates a key for a tenant. The returned `key` is never retrievable again. */
  async create(tenantId: string, name = "default"): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = KEY_PREFIX + base64url(randomBytes(32));
    const hash = await sha256Hex(key);
    const record: ApiKeyRecord = {
      id: newId("key", this.clock),
      tenantId,
      name,
      preview: key.slice(0, 7),
      hash,
      createdAt: this.clock.now().toISOString(),
    };
    const res = await this.kv.atomic()
      .check({ key: ["api_key", hash], versionstamp: null })
      .set(["api_key", hash], record)
      .set(["api_key_by_tenant", tenantId, record.id], hash)
      .set(["api_key_id", record.id], hash)
      .commit();
    if (!res.ok) throw new Error("api key collision; retry");
    return { key, record };
  }

  /** The tenant's keys, revoked ones included, without secrets. */
  async list(tenantId: string): Promise<Omit<ApiKeyRecord, "hash">[]> {
    const out: Omit<ApiKeyRecord, "hash">[] = [];
    for await (const e of this.kv.list<string>({ prefix: ["api_key_by_tenant", tenantId] })) {
      const rec = (await this.kv.get<ApiKeyRecord>(["api_key", e.value])).value;
      if (rec) {
        const { hash: _hash, ...rest } = rec;
        out.push(rest);
      }
    }
    return out;
  }

  /** Revokes a key by id; returns false when no such key exists. Idempotent. */
  async revoke(id: string): Promise<boolean> {
    const hash = (await this.kv.get<string>(["api_key_id", id])).value;
    if (!hash) return false;
    const entry = await this.kv.get<ApiKeyRecord>(["api_key", hash]);
    if (!entry.value) return false;
    if (entry.value.revokedAt) return true;
    const res = await this.kv.atomic().check(entry)
      .set(["api_key", hash], { ...entry.value, revokedAt: this.clock.now().toISOString() }).commit();
    if (!res.ok) return this.revoke(id);
    return true;
  }

  /**
   * Resolves an `Authorization` header value to the key record.
   * @throws AppError 401 when the header is missing or not `Bearer ak_...`; 403 when the key is
   * unknown or revoked.
   */
  async authenticate(authorization: string | undefined | null): Promise<ApiKeyRecord> {
    if (!authorization) throw authErrors.missing_api_key();
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match || !match[1]!.startsWith(KEY_PREFIX)) {
      throw authErrors.malformed_api_key();
    }
    const token = match[1]!;
    const rec = KEY_RE.test(token)
      ? (await this.kv.get<ApiKeyRecord>(["api_key", await sha256Hex(token)])).value
      : null;
    if (!rec) throw authErrors.invalid_api_key();
    if (rec.revokedAt) throw authErrors.revoked_api_key();
    return rec;
  }
}
