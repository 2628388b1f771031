/**
 * Resized, re-encoded article images with a disk cache.
 *
 * Origins are fetched through the SSRF guard (image types only, size-capped); `sharp` decodes
 * (pixel-limited, EXIF orientation applied, metadata stripped), resizes without ever enlarging,
 * and encodes webp when the client accepts it, else PNG for images with transparency and JPEG for
 * the rest. Results and origin bytes are cached under `DATA_DIR/images/`, file names being
 * sha256 of what determines the bytes; the oldest files go when the cache passes its budget.
 */
import { loadSharp } from "./sharp_native.ts";
import { sha256Hex } from "../crypto.ts";
import type { Logger } from "../log.ts";
import { SafeFetcher, SafeFetchError } from "../net/mod.ts";

/** Image types we decode. SVG is left out on purpose: it is a document, not pixels. */
export const IMAGE_TYPES = ["image/jpeg", "image/png", "image/webp", "image/gif", "image/avif"] as const;

/** Smallest `w`/`h` accepted. */
export const MIN_DIMENSION = 16;

/** How the image fills a `w` x `h` box: `cover` crops to exactly the box, `inside` fits within it. */
export type ImageFit = "cover" | "inside";

/** A resize request after validation. */
export interface ImageRequest {
  src: string;
  width?: number;
  height?: number;
  /** Applies when both width and height are given. Default `cover`. */
  fit?: ImageFit;
  /** Whether the client accepts webp. */
  webp: boolean;
}

/** A rendered image. */
export interface RenderedImage {
  bytes: Uint8Array;
  contentType: string;
  /** Strong ETag (quoted). */
  etag: string;
  cache: "hit" | "miss";
}

/** The origin could not provide a usable image: 502 at the edge. */
export class ImageOriginError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ImageOriginError";
  }
}

/** What reads origin images: the SSRF-guarded fetcher, or one that answers some URLs itself (the demo's). */
export type ImageFetcher = Pick<SafeFetcher, "fetch">;

/** Options of {@link ImageService}. */
export interface ImageServiceOptions {
  fetcher: ImageFetcher;
  /** The service's data directory; the cache lives in `images/` under it. */
  dataDir: string;
  /** Largest origin image read. */
  maxBytes: number;
  /** Longest side of any output. */
  maxDimension: number;
  /** Cache budget in bytes; 0 turns the disk cache off. */
  cacheMaxBytes: number;
  log?: Logger;
  /** Concurrent sharp jobs. Default 2 (the machine's cores). */
  concurrency?: number;
  /** `libvips-cpp.so` to load before sharp (compiled binaries); default: beside the executable. */
  vipsLibPath?: string;
  /** Resize jobs allowed to wait for a slot before requests are shed with 503. Default 64. */
  maxQueue?: number;
}

const MAX_INPUT_PIXELS = 50_000_000; // decompression-bomb guard: a 10 MB PNG can claim 30k x 30k

/** The media type of encoded image bytes, by their magic numbers. */
export function sniffImageType(b: Uint8Array): string | undefined {
  if (b[0] === 0xff && b[1] === 0xd8) return "image/jpeg";
  if (b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return "image/png";
  if (b[0] === 0x52 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x46 && b[8] === 0x57 && b[9] === 0x45) {
    return "image/webp";
  }
  return undefined;
}

/** Too many resize jobs are waiting: 503 at the edge, try again shortly. */
export class ImageBusyError extends Error {
  constructor() {
    super("image service is busy: try again shortly");
    this.name = "ImageBusyError";
  }
}

/** A counting semaphore with a bounded queue: sharp work is CPU-bound, so it queues, and sheds past the bound. */
class Slots {
  #free: number;
  #maxQueue: number;
  #waiting: (() => void)[] = [];
  constructor(n: number, maxQueue: number) {
    this.#free = n;
    this.#maxQueue = maxQueue;
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else if (this.#waiting.length >= this.#maxQueue) throw new ImageBusyError();
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

/** Renders and caches article images. One per process. */
export class ImageService {
  readonly #fetcher: ImageFetcher;
  readonly #dir: string;
  readonly #maxBytes: number;
  readonly #maxDimension: number;
  readonly #cacheMaxBytes: number;
  readonly #log?: Logger;
  readonly #slots: Slots;
  readonly #vipsLibPath?: string;
  readonly #inflight = new Map<string, Promise<RenderedImage>>();
  // Origin reads under way, by source: many sizes of one uncached image share one fetch (and one
  // copy in memory) instead of one outbound request of up to `maxBytes` per size.
  readonly #originInflight = new Map<string, Promise<Uint8Array>>();
  #cacheBytes?: number;
  #sweeping = false;

  constructor(options: ImageServiceOptions) {
    this.#fetcher = options.fetcher;
    this.#dir = `${options.dataDir.replace(/\/+$/, "")}/images`;
    this.#maxBytes = options.maxBytes;
    this.#maxDimension = options.maxDimension;
    this.#cacheMaxBytes = options.cacheMaxBytes;
    this.#log = options.log;
    this.#vipsLibPath = options.vipsLibPath;
    this.#slots = new Slots(options.concurrency ?? 2, options.maxQueue ?? 64);
  }

  /** Largest accepted `w`/`h`. */
  get maxDimension(): number {
    return this.#maxDimension;
  }

  /** The cache key (and ETag) of a request: sha256 of what determines the output bytes. */
  async key(req: ImageRequest): Promise<string> {
    const fit = req.width && req.height ? req.fit ?? "cover" : "-";
    return await sha256Hex(
      `${req.src}|${req.width ?? "-"}|${req.height ?? "-"}|${fit}|${req.webp ? "webp" : "legacy"}`,
    );
  }

  /** Whether `req` is served from the cache (no resize): what the endpoint's render limit leaves uncounted. */
  async isCached(req: ImageRequest): Promise<boolean> {
    if (this.#cacheMaxBytes === 0) return false;
    try {
      return (await Deno.stat(`${this.#dir}/v/${await this.key(req)}`)).isFile;
    } catch {
      return false;
    }
  }

  /**
   * Renders `req`, from the cache when it can.
   * @throws {ImageOriginError} when the origin is refused, fails, or sends something that is not an image.
   */
  async render(req: ImageRequest): Promise<RenderedImage> {
    const key = await this.key(req);
    const running = this.#inflight.get(key);
    if (running) return running;
    const work = this.#render(key, req).finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, work);
    return work;
  }

  async #render(key: string, req: ImageRequest): Promise<RenderedImage> {
    const etag = `"${key}"`;
    const variantPath = `${this.#dir}/v/${key}`;
    const cached = await this.#readCache(variantPath);
    if (cached) {
      const contentType = sniffImageType(cached);
      if (contentType) return { bytes: cached, contentType, etag, cache: "hit" };
    }
    const original = await this.#original(req.src);
    const { data, info } = await this.#slots.run(() =>
      this.#transform(original, req).catch((err) => {
        throw new ImageOriginError("image origin sent an image that could not be decoded", { cause: err });
      })
    );
    const bytes = new Uint8Array(data);
    await this.#writeCache(variantPath, bytes);
    return { bytes, contentType: `image/${info.format === "jpeg" ? "jpeg" : info.format}`, etag, cache: "miss" };
  }

  async #transform(input: Uint8Array, req: ImageRequest) {
    const sharp = await loadSharp(this.#vipsLibPath);
    const image = sharp(input, { limitInputPixels: MAX_INPUT_PIXELS, failOn: "error" }).rotate();
    const both = req.width !== undefined && req.height !== undefined;
    if (req.width !== undefined || req.height !== undefined) {
      image.resize({
        width: req.width,
        height: req.height,
        fit: both ? (req.fit ?? "cover") : "inside",
        position: "centre",
        withoutEnlargement: true,
      });
    } else {
      image.resize({ width: this.#maxDimension, height: this.#maxDimension, fit: "inside", withoutEnlargement: true });
    }
    if (req.webp) image.webp({ quality: 80, effort: 4 });
    else if ((await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS }).metadata()).hasAlpha) {
      image.png({ compressionLevel: 8, adaptiveFiltering: true });
    } else image.jpeg({ quality: 80, mozjpeg: true });
    return await image.toBuffer({ resolveWithObject: true });
  }

  /** The origin bytes, from the cache or through the SSRF guard; one read per source at a time. */
  #original(src: string): Promise<Uint8Array> {
    const running = this.#originInflight.get(src);
    if (running) return running;
    const work = this.#readOriginal(src).finally(() => this.#originInflight.delete(src));
    this.#originInflight.set(src, work);
    return work;
  }

  async #readOriginal(src: string): Promise<Uint8Array> {
    const path = `${this.#dir}/o/${await sha256Hex(src)}`;
    const cached = await this.#readCache(path);
    if (cached) return cached;
    try {
      const res = await this.#fetcher.fetch(src, { accept: IMAGE_TYPES, maxBytes: this.#maxBytes });
      await this.#writeCache(path, res.body);
      return res.body;
    } catch (err) {
      if (err instanceof SafeFetchError) {
        throw new ImageOriginError(`image origin failed: ${err.message}`, { cause: err });
      }
      throw err;
    }
  }

  async #readCache(path: string): Promise<Uint8Array | undefined> {
    if (this.#cacheMaxBytes === 0) return undefined;
    try {
      const bytes = await Deno.readFile(path);
      // Touch it: eviction drops the least recently used files first.
      const now = new Date();
      await Deno.utime(path, now, now).catch(() => {});
      return bytes;
    } catch {
      return undefined;
    }
  }

  async #writeCache(path: string, bytes: Uint8Array): Promise<void> {
    if (this.#cacheMaxBytes === 0) return;
    try {
      const dir = path.slice(0, path.lastIndexOf("/"));
      await Deno.mkdir(dir, { recursive: true });
      // Write then rename: a reader never sees half a file.
      const tmp = `${path}.${crypto.randomUUID()}.tmp`;
      await Deno.writeFile(tmp, bytes);
      await Deno.rename(tmp, path);
      this.#cacheBytes = (this.#cacheBytes ?? (await this.#usage())) + bytes.length;
      if (this.#cacheBytes > this.#cacheMaxBytes) await this.#sweep();
    } catch (err) {
      this.#log?.warn("image cache write failed", { error: String(err) });
    }
  }

  async #files(): Promise<{ path: string; size: number; mtime: number }[]> {
    const out: { path: string; size: number; mtime: number }[] = [];
    for (const sub of ["v", "o"]) {
      try {
        for await (const e of Deno.readDir(`${this.#dir}/${sub}`)) {
          if (!e.isFile) continue;
          const path = `${this.#dir}/${sub}/${e.name}`;
          const st = await Deno.stat(path).catch(() => null);
          if (st) out.push({ path, size: st.size, mtime: st.mtime?.getTime() ?? 0 });
        }
      } catch { /* not created yet */ }
    }
    return out;
  }

  async #usage(): Promise<number> {
    return (await this.#files()).reduce((n, f) => n + f.size, 0);
  }

  /** Deletes least recently used files until the cache is at 80 % of its budget. */
  async #sweep(): Promise<void> {
    if (this.#sweeping) return;
    this.#sweeping = true;
    try {
      const files = (await this.#files()).sort((a, b) => a.mtime - b.mtime);
      let total = files.reduce((n, f) => n + f.size, 0);
      for (const f of files) {
        if (total <= this.#cacheMaxBytes * 0.8) break;
        await Deno.remove(f.path).catch(() => {});
        total -= f.size;
      }
      this.#cacheBytes = total;
    } finally {
      this.#sweeping = false;
    }
  }
}
