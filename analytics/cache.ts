/**
 * The analytics answer cache, shared by every process through KV. An answer is stored as UTF-8
 * JSON split into chunks under the 64 KiB value limit: `["an_cache", tenant, endpoint, hash]` holds
 * the header (chunk count, expiry, a write id), `[..., hash, i]` the chunks. The expiry is checked
 * on read (KV's expireIn only bounds how long the bytes linger).
 */
import type { Clock } from "../core/clock.ts";
import { sha256Hex } from "../core/crypto.ts";

const CHUNK = 60_000;
// Deno KV: at most 800 KiB per atomic commit; answers bigger than this are written in parts with
// the header last, so a reader never sees a header whose chunks are missing.
const COMMIT_BYTES = 700_000;

interface Header {
  chunks: number;
  expiresAt: number;
  writeId: string;
}

/** How a request used the cache (the `X-Cache` header). */
export type CacheStatus = "HIT" | "MISS" | "BYPASS" | "DISABLED";

/** KV-backed JSON cache with a TTL. */
export class AnalyticsCache {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock, readonly ttlS: number) {}

  /** Whether caching is on (a TTL of 0 turns it off). */
  get enabled(): boolean {
    return this.ttlS > 0;
  }

  /** The cache key of an endpoint and its normalised filters (sorted, so order does not matter). */
  async key(tenantId: string, endpoint: string, filters: Record<string, string>): Promise<Deno.KvKey> {
    const canonical = JSON.stringify(Object.keys(filters).sort().map((k) => [k, filters[k]]));
    return ["an_cache", tenantId, endpoint, await sha256Hex(canonical)];
  }

  /** The cached JSON text, or null when absent, expired or incomplete. */
  async get(key: Deno.KvKey): Promise<string | null> {
    const head = (await this.kv.get<Header>(key)).value;
    if (!head || head.expiresAt <= this.clock.now().getTime()) return null;
    const keys = Array.from({ length: head.chunks }, (_, i) => [...key, head.writeId, i]);
    const parts: Uint8Array[] = [];
    for (let i = 0; i < keys.length; i += 10) {
      for (const e of await this.kv.getMany<Uint8Array[]>(keys.slice(i, i + 10))) {
        if (!e.value) return null;
        parts.push(e.value);
      }
    }
    const total = parts.reduce((n, p) => n + p.byteLength, 0);
    const buf = new Uint8Array(total);
    let at = 0;
    for (const p of parts) {
      buf.set(p, at);
      at += p.byteLength;
    }
    return new TextDecoder().decode(buf);
  }

  /** Stores JSON text for the TTL. */
  async set(key: Deno.KvKey, json: string): Promise<void> {
    if (!this.enabled) return;
    const bytes = new TextEncoder().encode(json);
    const writeId = crypto.randomUUID();
    const expireIn = this.ttlS * 1000;
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < bytes.byteLength || i === 0; i += CHUNK) chunks.push(bytes.subarray(i, i + CHUNK));
    let op = this.kv.atomic();
    let size = 0;
    for (let i = 0; i < chunks.length; i++) {
      if (size + chunks[i]!.byteLength > COMMIT_BYTES) {
        await op.commit();
        op = this.kv.atomic();
        size = 0;
      }
      // Chunks live under the write id, so a concurrent writer never mixes its parts with ours;
      // they expire a little after the header.
      op = op.set([...key, writeId, i], chunks[i]!, { expireIn: expireIn + 60_000 });
      size += chunks[i]!.byteLength;
    }
    const head: Header = { chunks: chunks.length, expiresAt: this.clock.now().getTime() + expireIn, writeId };
    await op.set(key, head, { expireIn }).commit();
  }
}
