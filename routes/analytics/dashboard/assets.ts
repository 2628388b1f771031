/**
 * The dashboard's static files, kept in memory with a content hash and a gzip copy (made on first
 * use): the page links them by hashed URL (`name?v=<hash>`), so browsers cache them for a year and
 * a new build is a new URL; any other URL of the file revalidates with its ETag.
 */
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";

/** A file's content and media type. */
export interface AssetSource {
  /** The text, imported at build time (`with { type: "text" }`), so a compiled binary carries it. */
  text: string;
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

/** Hashes and compresses the named files on first use. */
export class AssetStore {
  #loaded: Map<string, LoadedAsset> | undefined;

  constructor(private readonly sources: Record<string, AssetSource>) {}

  /** Every asset by name. */
  all(): Map<string, LoadedAsset> {
    this.#loaded ??= new Map(Object.entries(this.sources).map(([name, src]) => [name, prepare(src)]));
    return this.#loaded;
  }

  /** The asset called `name`, or undefined for a name that is not one of ours. */
  get(name: string): LoadedAsset | undefined {
    if (!Object.hasOwn(this.sources, name)) return undefined;
    return this.all().get(name);
  }

  /** `name?v=<hash>` URLs under `prefix`, by name. */
  urls(prefix: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, a] of this.all()) out[name] = `${prefix}${name}?v=${a.hash}`;
    return out;
  }
}

/** Bytes, hash and gzip copy of one source. */
function prepare(src: AssetSource): LoadedAsset {
  const bytes = new TextEncoder().encode(src.text);
  const hash = createHash("sha256").update(bytes).digest("hex").slice(0, 16);
  return { bytes, gzip: gzipped(bytes), hash, etag: `"${hash}"`, type: src.type };
}

/** `bytes` gzip-compressed (level 9: done once per process). */
export function gzipped(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const gz = gzipSync(bytes, { level: 9 });
  return new Uint8Array(gz.buffer.slice(gz.byteOffset, gz.byteOffset + gz.byteLength) as ArrayBuffer);
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
