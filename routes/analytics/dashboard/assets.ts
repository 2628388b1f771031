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

/**
 * Whether to answer with the gzip copy, by RFC 9110 12.5.3: `gzip` (or its alias `x-gzip`) takes
 * the weight of its own entry, else of `*` (which stands only for codings not listed), else none
 * (q=0 refuses). It is sent unless refused or the client weighs the uncompressed bytes
 * (`identity`, or `*` when identity is not listed) above it. No header: the uncompressed bytes.
 * An entry with a malformed weight counts as absent.
 * @example acceptsGzip("gzip;q=0, *") === false
 */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  if (acceptEncoding === undefined) return false;
  const weights = codingWeights(acceptEncoding);
  const star = weights.get("*");
  const gzip = weights.get("gzip") ?? weights.get("x-gzip") ?? star ?? 0;
  const identity = weights.get("identity") ?? star ?? 0;
  return gzip > 0 && gzip >= identity;
}

/**
 * The weight of each coding an `Accept-Encoding` value lists (lower-cased); a coding listed twice
 * takes its lower weight, so a refusal is never outweighed.
 */
function codingWeights(acceptEncoding: string): Map<string, number> {
  const weights = new Map<string, number>();
  for (const element of acceptEncoding.split(",")) {
    const [coding, ...params] = element.split(";").map((p) => p.trim().toLowerCase());
    if (!coding || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(coding)) continue;
    const q = params.find((p) => /^q\s*=/.test(p));
    const weight = q === undefined ? 1 : qvalue(q.slice(q.indexOf("=") + 1).trim());
    if (weight === null) continue;
    weights.set(coding, Math.min(weight, weights.get(coding) ?? 1));
  }
  return weights;
}

/** A `qvalue` (RFC 9110 12.4.2: 0 to 1, at most three decimals), or null when malformed. */
function qvalue(text: string): number | null {
  return /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/.test(text) ? Number(text) : null;
}
