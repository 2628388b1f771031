/**
 * Search shards by data model (docs/operations.md, "Search shards"): a process told
 * `SEARCH_SHARD=2/4` builds and follows only the indexes of the data models whose hash falls in
 * shard 2 of 4, plus any data model it names (`SEARCH_SHARD=2/4,dm_a,dm_b`, or a list alone), so
 * an AI model's data models can be co-located. The hash is CRC-32 (IEEE, as zlib and HAProxy's
 * `crc32` converter compute it), so HAProxy routes with its own `url_param(data_model_id),crc32,mod(4)`
 * and no router of ours. Shards are numbered from 1; HAProxy's `mod` gives 0..n-1.
 */
import type { AppError } from "../../errors.ts";
import { searchErrors } from "../errors.ts";

/** Which data models a process serves: all of them (no `SEARCH_SHARD`), a hash shard and/or a list. */
export interface SearchShard {
  /** `{index, count}` of a hash shard, 1 <= index <= count. */
  hash?: { index: number; count: number };
  /** Data models served whatever their hash. */
  listed: ReadonlySet<string>;
  /** The setting as given, for logs and error bodies. */
  label: string;
}

const DM_ID = /^dm_[A-Za-z0-9]{1,64}$/;

/**
 * Parses `SEARCH_SHARD`: comma-separated items, each `i/n` (at most one) or a data model id.
 * @returns null when unset (every data model is served); throws a message naming the setting, never its value
 */
export function parseSearchShard(value: string | undefined): SearchShard | null {
  if (value === undefined || value.trim() === "") return null;
  let hash: SearchShard["hash"];
  const listed = new Set<string>();
  for (const raw of value.split(",")) {
    const item = raw.trim();
    const m = /^(\d{1,4})\/(\d{1,4})$/.exec(item);
    if (m) {
      const index = Number(m[1]);
      const count = Number(m[2]);
      if (hash || count < 1 || index < 1 || index > count) {
        throw new Error("SEARCH_SHARD must be i/n with 1 <= i <= n, and/or data model ids, separated by commas");
      }
      hash = { index, count };
    } else if (DM_ID.test(item)) {
      listed.add(item);
    } else {
      throw new Error("SEARCH_SHARD must be i/n with 1 <= i <= n, and/or data model ids, separated by commas");
    }
  }
  const label = [...(hash ? [`${hash.index}/${hash.count}`] : []), ...listed].join(",");
  return { hash, listed, label };
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (IEEE 802.3, reflected, as zlib and HAProxy's `crc32` converter) of the UTF-8 bytes of `s`. */
export function crc32(s: string): number {
  let c = 0xffffffff;
  for (const b of new TextEncoder().encode(s)) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** The hash shard (1..count) a data model belongs to. */
export function shardOf(dataModelId: string, count: number): number {
  return (crc32(dataModelId) % count) + 1;
}

/** Whether a process with `shard` serves `dataModelId` (every one when unsharded). */
export function serves(shard: SearchShard | null, dataModelId: string): boolean {
  if (!shard) return true;
  if (shard.listed.has(dataModelId)) return true;
  return shard.hash !== undefined && shardOf(dataModelId, shard.hash.count) === shard.hash.index;
}

/** The header a balancer sets to have a miss answered 503 (which it retries elsewhere) instead of 421. */
export const SHARD_RETRY_HEADER = "x-shard-retry";

/**
 * What a miss tells the caller about the shard: the hash shard (`2/4`) only. The listed data
 * models are left out: they may be other tenants' ids, and the check runs before authentication.
 */
export function publicLabel(shard: SearchShard): string {
  return shard.hash ? `${shard.hash.index}/${shard.hash.count}` : "listed";
}

/**
 * 421: the data model is served by another shard. The body is the same JSON on every route, and
 * never an empty result. A balancer that cannot retry on 421 (HAProxy retries 503) asks for 503
 * with {@link SHARD_RETRY_HEADER}; the `shard-miss` response header marks it either way.
 */
export function outsideShard(shard: SearchShard, asRetryable = false): AppError {
  const label = publicLabel(shard);
  const raise = asRetryable ? searchErrors.misdirected_request_retryable : searchErrors.misdirected_request;
  return raise({ extra: { error: "misdirected_request", shard: label }, headers: { "shard-miss": label } });
}

/**
 * The data model a request names, as HAProxy reads it (docs/operations.md) and the route uses it:
 * the id in `/v1/data-models/{id}/...` (path field 4 of `/`-split), else the `data_model_id` query
 * parameter. A query parameter beside such a path is ignored by the route, so it must not decide.
 */
export function requestedDataModel(url: URL): string | null {
  const m = /^\/v1\/data-models\/([^/]+)/.exec(url.pathname);
  if (!m) return url.searchParams.get("data_model_id") || null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    // A broken escape (`%E0%A4%A`) names no data model: the route refuses the id as malformed.
    return null;
  }
}
