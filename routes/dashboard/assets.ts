/**
 * The dashboard's static files, read once and kept in memory with a content hash and a gzip copy:
 * the page links them by hashed URL (`name?v=<hash>`), so browsers cache them for a year and a new
 * build is a new URL; any other URL of the file revalidates with its ETag.
 */
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";

/** Where a file comes from and what it is. */
export interface AssetSource {
  /** The file's path, resolved when first needed (never at import time). */
  file: () => string;
  type: string;
}

/** One file in memory. */
export interface LoadedAsset {
  bytes: Uint8Array<ArrayBuffer>;
  gzip: Uint8Array<ArrayBuffer>;
  /** First 16 hex characters of the SHA-256 of `bytes`. */
  hash: string;
  /** Strong ETag (quoted hash). */
  etag: string;
  type: string;
}

/** Cache lifetime of a hashed URL: a year, never revalidated. */
export const IMMUTABLE = "public, max-age=31536000, immutable";
/** Any other URL of an asset: may be stored, revalidated (ETag) before each use. */
export const REVALIDATE = "public, no-cache";

/** Loads the named files on first use; concurrent first uses share one read. */
export class AssetStore {
  #loaded: Promise<Map<string, LoadedAsset>> | undefined;

  constructor(private readonly sources: Record<string, AssetSource>) {}

  /** Every asset by name (read, hashed and compressed on the first call). */
  all(): Promise<Map<string, LoadedAsset>> {
    this.#loaded ??= this.#load();
    // A failed read is retried on the next request rather than remembered.
    this.#loaded.catch(() => (this.#loaded = undefined));
    return this.#loaded;
  }

  /** The asset called `name`, or undefined for a name that is not one of ours. */
  async get(name: string): Promise<LoadedAsset | undefined> {
    if (!Object.hasOwn(this.sources, name)) return undefined;
    return (await this.all()).get(name);
  }

  /** `name?v=<hash>` URLs under `prefix`, by name. */
  async urls(prefix: string): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const [name, a] of await this.all()) out[name] = `${prefix}${name}?v=${a.hash}`;
    return out;
  }

  async #load(): Promise<Map<string, LoadedAsset>> {
    const entries = await Promise.all(
      Object.entries(this.sources).map(async ([name, src]) => {
        const bytes = await Deno.readFile(src.file());
        const hash = createHash("sha256").update(bytes).digest("hex").slice(0, 16);
        const gz = gzipSync(bytes, { level: 9 });
        const gzip = new Uint8Array(gz.buffer.slice(gz.byteOffset, gz.byteOffset + gz.byteLength) as ArrayBuffer);
        return [name, { bytes, gzip, hash, etag: `"${hash}"`, type: src.type }] as const;
      }),
    );
    return new Map(entries);
  }
}

/** Whether the request's `If-None-Match` names `etag` (a list, weak forms and `*` included). */
export function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((t) => {
    const tag = t.trim().replace(/^W\//, "");
    return tag === "*" || tag === etag;
  });
}

/** Whether the client takes gzip (`Accept-Encoding`, q=0 refuses). */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  if (!acceptEncoding) return false;
  return acceptEncoding.split(",").some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(";");
    if (coding !== "gzip" && coding !== "*") return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    return !q || Number(q.slice(2)) > 0;
  });
}
