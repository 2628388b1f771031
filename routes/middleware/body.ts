import type { Context, MiddlewareHandler } from "hono";
import { readStreamCapped } from "../../core/bytes.ts";
import { AppError } from "../../core/errors.ts";
import type { AppEnv } from "../env.ts";
import { type BodyBudget, processBodyBudget, SMALL_BODY_BYTES } from "./body_budget.ts";
import { MAX_JSON_DEPTH, nestsAtMost } from "../../core/json_depth.ts";
import { rebuiltRequest } from "../rebuilt_request.ts";

const JSON_TYPE = /^application\/(?:[a-z0-9.+-]+\+)?json\s*(?:;|$)/i;

/** True when a Content-Type header names JSON (`application/json`, `application/*+json`). */
export const isJsonType = (contentType: string | undefined): boolean => JSON_TYPE.test(contentType ?? "");

/** A request body that sent nothing for the server's idle limit (see routes/server.ts). */
export class BodyStalledError extends Error {
  constructor(readonly idleMs: number) {
    super(`request body stalled for ${idleMs} ms`);
    this.name = "BodyStalledError";
  }
}

/**
 * A request body that came slower than the server's read deadline allows: its first `floorMs`,
 * and then `minBytesPerS` on average (see routes/server.ts).
 */
export class BodyTooSlowError extends Error {
  constructor(readonly floorMs: number, readonly minBytesPerS: number) {
    super(`request body slower than ${minBytesPerS} bytes/s after ${floorMs} ms`);
    this.name = "BodyTooSlowError";
  }
}

/**
 * Our error for a body that failed while it was read: a stalled body, or one too slow, becomes 408
 * (and the connection is closed), a body cut off by the client becomes 499 (logged as a client
 * disconnect, never as our 500).
 */
function bodyReadError(err: unknown): never {
  // Ours already (a body of unknown length refused its share of the budget midway, or by `beforeRead`).
  if (err instanceof AppError) throw err;
  if (err instanceof BodyStalledError || err instanceof BodyTooSlowError) {
    throw new AppError(
      "timeout",
      "request_timeout",
      err instanceof BodyStalledError
        ? `Request body stalled: nothing arrived for ${err.idleMs / 1000} s`
        : `Request body too slow: after its first ${err.floorMs / 1000} s it must average ${err.minBytesPerS} bytes/s`,
      {
        headers: { connection: "close" },
        cause: err,
      },
    );
  }
  throw new AppError(
    "client_closed",
    "client_closed_request",
    "The client closed the connection before the body ended",
    {
      cause: err,
    },
  );
}

const tooLarge = (limit: number) =>
  new AppError("too_large", "body_too_large", `Request body too large: the limit is ${limit} bytes`);

/** A request body being read under its share of the budget. */
interface SharedBody {
  /** The body to read (null when there is none). */
  body: ReadableStream<Uint8Array> | null;
  /** Gives back what was taken (once; nothing when nothing was). */
  giveBack(): void;
}

/**
 * Takes a body's share of the budget before it is read: its declared `Content-Length`. A body that
 * declares none (chunked; HTTP/2 clients may omit it) takes nothing until it has read past
 * {@link SMALL_BODY_BYTES}, and only then `limit`, waiting there, unread further, when there is no
 * room (then `afterWait` runs: what a wait may have changed is checked again). Taken up front, its
 * `limit` counted every small chunked body as a large one against its sender's part.
 * @throws {AppError} 413 `body_too_large` when it declares more than `limit`; 503 `server_busy` when
 *   the budget has no room in time (a body of unknown length: from its reads)
 */
async function shareBody(
  req: Request,
  limit: number,
  budget: BodyBudget,
  holder: string | undefined,
  afterWait?: () => Promise<void>,
): Promise<SharedBody> {
  if (!req.body) return { body: null, giveBack: () => {} };
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared)) {
    if (declared > limit) throw tooLarge(limit);
    return { body: req.body, giveBack: await budget.take(declared, holder) };
  }
  const source = req.body.getReader();
  let received = 0;
  let giveBack: (() => void) | null = null;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await source.read();
        if (chunk.done) return controller.close();
        received += chunk.value.byteLength;
        if (giveBack === null && received > SMALL_BODY_BYTES) {
          let waited = false;
          giveBack = await budget.take(limit, holder, () => (waited = true));
          if (waited) await afterWait?.();
        }
        controller.enqueue(chunk.value);
      } catch (err) {
        source.cancel(err).catch(() => {});
        controller.error(err);
      }
    },
    cancel: (reason) => source.cancel(reason),
    // Pulled only when read: a chunk pulled ahead would read on while the share is waited for.
  }, { highWaterMark: 0 });
  return { body, giveBack: () => giveBack?.() };
}

/** Where a body's share is taken from, and who it counts against. */
export interface BodyShareOptions {
  /** The budget (default: the process's, {@link processBodyBudget}). */
  budget?: BodyBudget;
  /**
   * Who the share counts against: a sender with no credential, or one free to mint (an anonymous
   * agent's token), by its address ({@link BodyHolder}), so its bodies hold and wait within its part.
   */
  holder?: string;
}

/**
 * Takes a body's share of the budget for a reader of its own (one that answers an oversized body in
 * its own words): the declared `Content-Length` up to `limit`, or `limit`. Resolves with the
 * function that gives it back.
 * @throws {AppError} 503 `server_busy` when the budget has no room in time
 */
export function takeBodyShare(
  req: Request,
  limit: number,
  { budget = processBodyBudget, holder }: BodyShareOptions = {},
): Promise<() => void> {
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  return budget.take(!req.body ? 0 : Number.isFinite(declared) ? Math.min(declared, limit) : limit, holder);
}

/** Reads a body whose share of the budget is taken already (or is taken as it is read). */
async function readTaken(stream: ReadableStream<Uint8Array> | null, limit: number): Promise<Uint8Array> {
  if (!stream) return new Uint8Array();
  const body = await readStreamCapped(stream, limit).catch(bodyReadError);
  if (!body) throw tooLarge(limit);
  return body;
}

/**
 * Reads a request body to bytes, refusing more than `limit` bytes without buffering the rest. The
 * body takes its share of `budget` first (it may wait there, unread) and gives it back once read.
 * @throws {AppError} 413 `body_too_large`; 503 `server_busy` when the budget has no room in time
 */
export async function readBodyCapped(
  req: Request,
  limit: number,
  { budget = processBodyBudget, holder }: BodyShareOptions = {},
): Promise<Uint8Array> {
  const shared = await shareBody(req, limit, budget, holder);
  try {
    return await readTaken(shared.body, limit);
  } finally {
    shared.giveBack();
  }
}

/**
 * Why a body could not be used as JSON. `why` is one of our own fixed phrases: never the parser's
 * message, which quotes a slice of the body.
 */
export type BodyProblem =
  | { kind: "media_type" }
  | { kind: "syntax"; why: string }
  | { kind: "not_object" };

/** How each route family words a body problem (the spec fixes different bodies per family). */
export type BodyRejection = (problem: BodyProblem) => AppError;

/** The bearer routes' wording: 415 for another media type, 400 `malformed_json` otherwise. */
export const messageRejection: BodyRejection = (p) =>
  p.kind === "media_type"
    ? new AppError("unsupported_media_type", "unsupported_media_type", "Content-Type must be application/json")
    : p.kind === "syntax"
    ? new AppError("bad_request", "malformed_json", `Malformed JSON body: ${p.why}`)
    : new AppError("bad_request", "malformed_json", "Malformed JSON body: expected a JSON object");

/**
 * Decodes bytes as strict UTF-8 JSON. The one JSON decoder of request bodies: every route family
 * reads its bodies through it and only words the problems its own way.
 */
export function decodeJson(
  bytes: Uint8Array,
  { object = false, empty }: { object?: boolean; empty?: unknown } = {},
): { value: unknown } | BodyProblem {
  if (bytes.length === 0 && empty !== undefined) return { value: empty };
  let value: unknown;
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    if (!nestsAtMost(text)) return { kind: "syntax", why: TOO_DEEP };
    value = JSON.parse(text);
  } catch (err) {
    return { kind: "syntax", why: err instanceof SyntaxError ? "not valid JSON" : "not valid UTF-8" };
  }
  if (object && (typeof value !== "object" || value === null || Array.isArray(value))) return { kind: "not_object" };
  return { value };
}

/** Why a body nested too deep is refused (one of our fixed phrases, see {@link BodyProblem}). */
const TOO_DEEP = `nested deeper than ${MAX_JSON_DEPTH} levels`;

/** Bodies at least this large are decoded in a worker: JSON.parse of 30 MB holds the event loop about 1 s. */
export const OFF_THREAD_JSON_BYTES = 1024 * 1024;
/**
 * Most JSON values (objects, arrays, strings, numbers, ...) a body decoded in the worker may hold.
 * The decoded value is copied back to the event loop value by value, about 0.35 µs each: this bound
 * keeps that near 100 ms. 1,000 articles with 200 categories each are 220,000.
 */
const MAX_OFF_THREAD_JSON_VALUES = 300_000;
// Large bodies decoded at once: a bound on threads. Those waiting are bounded by the body budget
// (body_budget.ts), whose share each holds until it is answered.
const JSON_WORKERS = 2;
let jsonRunning = 0;
const jsonWaiting: (() => void)[] = [];

/**
 * {@link decodeJson}, in a one-off worker for bodies of {@link OFF_THREAD_JSON_BYTES} or more.
 * @throws {AppError} 413 `body_too_large` when the body holds more than
 *   {@link MAX_OFF_THREAD_JSON_VALUES} values
 */
export async function decodeJsonOffThread(
  bytes: Uint8Array,
  options: { object?: boolean; empty?: unknown } = {},
): Promise<{ value: unknown } | BodyProblem> {
  if (bytes.length < OFF_THREAD_JSON_BYTES) return decodeJson(bytes, options);
  // A finished decode hands its slot straight to the next in line, so none starts past the bound.
  if (jsonRunning >= JSON_WORKERS) await new Promise<void>((resolve) => jsonWaiting.push(resolve));
  else jsonRunning++;
  const worker = new Worker(new URL("./json_worker.ts", import.meta.url), { type: "module" });
  try {
    const reply = await new Promise<{ value?: unknown; why?: string; tooManyValues?: true }>((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => {
        e.preventDefault();
        reject(new Error("JSON body worker failed"));
      };
      worker.postMessage({ bytes, maxValues: MAX_OFF_THREAD_JSON_VALUES, tooDeep: TOO_DEEP });
    });
    if (reply.why !== undefined) return { kind: "syntax", why: reply.why };
    if (reply.tooManyValues) {
      throw new AppError(
        "too_large",
        "body_too_large",
        `Request body too large: the limit is ${MAX_OFF_THREAD_JSON_VALUES} JSON values`,
      );
    }
    const value = reply.value;
    if (options.object && (typeof value !== "object" || value === null || Array.isArray(value))) {
      return { kind: "not_object" };
    }
    return { value };
  } finally {
    worker.terminate();
    const next = jsonWaiting.shift();
    if (next) next();
    else jsonRunning--;
  }
}

/** Options of {@link readJson} and {@link bodyReader}. */
export interface JsonBodyOptions {
  /** Most bytes accepted; above it 413 `body_too_large`. */
  limit: number;
  /** Insist on a JSON Content-Type (default true). */
  requireJsonType?: boolean;
  /** Insist on a JSON object (default false). */
  object?: boolean;
  /** The value of an empty body; when unset an empty body is a syntax problem. */
  empty?: unknown;
  /** How problems are worded (default: {@link messageRejection}). */
  reject?: BodyRejection;
  /** The budget the body takes its share from (default: the process's, {@link processBodyBudget}). */
  budget?: BodyBudget;
}

/** Who a body's share of the budget counts against (a keyless sender's address), or none. */
export type BodyHolder = (c: Context<AppEnv>) => string | undefined;

/** Reads and decodes a JSON body under its share of the budget ({@link shareBody}); `inspect` sees the bytes first. */
async function readJsonTaken(
  req: Request,
  stream: ReadableStream<Uint8Array> | null,
  { limit, requireJsonType = true, object, empty, reject = messageRejection }: JsonBodyOptions,
  inspect?: (bytes: Uint8Array) => Promise<void>,
): Promise<{ bytes: Uint8Array; value: unknown }> {
  const bytes = await readTaken(stream, limit);
  if (requireJsonType && !isJsonType(req.headers.get("content-type") ?? undefined)) {
    throw reject({ kind: "media_type" });
  }
  await inspect?.(bytes);
  const decoded = await decodeJsonOffThread(bytes, { object, empty });
  if (!("value" in decoded)) throw reject(decoded);
  return { bytes, value: decoded.value };
}

/**
 * Reads and decodes a JSON body with a size cap; problems are thrown as `reject` words them. The
 * body holds its share of the budget until it is decoded.
 */
export async function readJson(
  req: Request,
  options: JsonBodyOptions & Pick<BodyShareOptions, "holder">,
): Promise<{ bytes: Uint8Array; value: unknown }> {
  const shared = await shareBody(req, options.limit, options.budget ?? processBodyBudget, options.holder);
  try {
    return await readJsonTaken(req, shared.body, options);
  } finally {
    shared.giveBack();
  }
}

const BODY_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Middleware: reads the body once with a size cap and keeps the exact bytes in `c.var.rawBody`
 * (signatures need them). With `json` (the default) the body must be JSON as {@link readJson}
 * checks it. The request is rebuilt over the bytes so later validators can read it again. The
 * body's share of the budget is taken before it is read (a body of unknown length: once it reads
 * past the small size) and held until the request is answered: its bytes and what is decoded from
 * them live that long.
 */
export function bodyReader(
  { json = true, holder, beforeRead, beforeDecode, ...options }: JsonBodyOptions & {
    json?: boolean;
    holder?: BodyHolder;
    /**
     * Runs once the body's share of the budget is taken, before it is read, and may refuse it by
     * throwing: a check that passed before a wait for the budget may no longer hold after it. A body
     * of unknown length takes its share midway ({@link shareBody}): it runs again after that wait.
     */
    beforeRead?: (c: Context<AppEnv>) => Promise<void>;
    /**
     * Sees a JSON body's bytes once read, before they are decoded, and may refuse it by throwing: what
     * a route can tell from the bytes (too many elements, a body larger than its sender may send)
     * then costs no decoding, which takes several times the body's size.
     */
    beforeDecode?: (c: Context<AppEnv>, bytes: Uint8Array) => Promise<void>;
  },
): MiddlewareHandler<AppEnv> {
  const budget = options.budget ?? processBodyBudget;
  return async function bodyReader(c, next) {
    // Only methods our routes take a body with: any other (GET, OPTIONS, TRACE, a made-up one) is
    // served by no route that reads one, so it goes on to its 404 without its body being read.
    if (!BODY_METHODS.has(c.req.method)) return await next();
    const again = beforeRead && (() => beforeRead(c));
    const shared = await shareBody(c.req.raw, options.limit, budget, holder?.(c), again);
    try {
      await beforeRead?.(c);
      const inspect = beforeDecode && ((bytes: Uint8Array) => beforeDecode(c, bytes));
      const read = json ? await readJsonTaken(c.req.raw, shared.body, options, inspect) : undefined;
      const bytes = read ? read.bytes : await readTaken(shared.body, options.limit);
      c.set("rawBody", bytes);
      // Its `signal` stays the incoming one's, read only if a route asks (it costs an AbortSignal).
      c.req.raw = rebuiltRequest(c.req.raw, bytes as BodyInit);
      // The validators read the value decoded here: parsing a 30 MB body twice held the event loop twice.
      if (read) c.req.json = <T>() => Promise.resolve(read.value as T);
      await next();
    } finally {
      shared.giveBack();
    }
  };
}
