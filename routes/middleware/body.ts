import type { MiddlewareHandler } from "hono";
import { AppError } from "../../core/errors.ts";
import type { AppEnv } from "../env.ts";

const JSON_TYPE = /^application\/(?:[a-z0-9.+-]+\+)?json\s*(?:;|$)/i;

/** Reads a request body to bytes, refusing more than `limit` bytes without buffering the rest. */
export async function readBodyCapped(req: Request, limit: number): Promise<Uint8Array> {
  const tooLarge = () => new AppError(413, "body_too_large", `Request body too large: the limit is ${limit} bytes`);
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const ch of chunks) {
    out.set(ch, at);
    at += ch.byteLength;
  }
  return out;
}

/**
 * Reads the body once with a size cap, keeps the exact bytes in `c.var.rawBody` (signatures need
 * them) and, when `json` is set, insists on a JSON content type and a body that parses. The
 * request is rebuilt over the bytes so later validators can read it again.
 */
export function bodyReader({ limit, json = true }: { limit: number; json?: boolean }): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return await next();
    const bytes = await readBodyCapped(c.req.raw, limit);
    c.set("rawBody", bytes);
    if (json) {
      const type = c.req.header("content-type") ?? "";
      if (!JSON_TYPE.test(type)) {
        throw new AppError(415, "unsupported_media_type", "Content-Type must be application/json");
      }
      try {
        JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
      } catch (err) {
        const why = err instanceof SyntaxError ? err.message : "body is not valid UTF-8";
        throw new AppError(400, "malformed_json", `Malformed JSON body: ${why}`);
      }
    }
    // No `signal`: touching the incoming request's signal makes Deno build an AbortSignal and an
    // AbortError for every request (~5 us), and nothing downstream listens to it.
    c.req.raw = new Request(c.req.raw.url, {
      method: c.req.raw.method,
      headers: c.req.raw.headers,
      body: bytes as BodyInit,
    });
    await next();
  };
}
