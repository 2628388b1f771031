import { createRoute, z } from "@hono/zod-openapi";
import type { Deps } from "../composition.ts";
import { AppError, notFound } from "../core/errors.ts";
import { ImageBusyError, ImageOriginError, MIN_DIMENSION } from "../core/images/mod.ts";
import { familyApp } from "./family.ts";
import { enforcePublicLimit, limitAddress } from "./middleware/public_limits.ts";
import { oncePerKey } from "./once_per_key.ts";

const dimension = (name: string, max: number) =>
  z.string().regex(/^\d{1,5}$/, { error: `must be a whole number from ${MIN_DIMENSION} to ${max}` })
    .transform(Number)
    .refine((n) => n >= MIN_DIMENSION && n <= max, { error: `must be a whole number from ${MIN_DIMENSION} to ${max}` })
    .optional()
    .openapi({ param: { name, in: "query" }, type: "integer", example: name === "w" ? 320 : 180 });

/** The query schema per largest dimension, built once per process: each app (a test world each) asks again. */
const imageQuery = oncePerKey(buildImageQuery);

function buildImageQuery(max: number) {
  return z.object({
    src: z.string().min(1).openapi({ description: "Signed image reference" }),
    w: dimension("w", max),
    h: dimension("h", max),
    // Dappier's clients resize with `width` / `height`; `w` / `h` win when both are sent.
    width: dimension("width", max),
    height: dimension("height", max),
    fit: z.enum(["cover", "inside"]).optional(),
  });
}

/** True when an Accept header takes `image/webp` (an explicit `q=0` refuses it). */
function acceptsWebp(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(",").some((part) => {
    const [type, ...params] = part.trim().split(";");
    if (type!.trim().toLowerCase() !== "image/webp") return false;
    const q = params.map((p) => p.trim().match(/^q=([\d.]+)$/)?.[1]).find(Boolean);
    return q === undefined || Number(q) > 0;
  });
}

/**
 * `GET /img?src={signed ref}&w=&h=&fit=` (mounted at `/img`): the endpoint behind every
 * `image_url`. Only sources signed by this service are served (never an open proxy).
 */
export function createImageRoutes(deps: Pick<Deps, "links" | "images" | "log" | "imageRenderLimiter" | "config">) {
  const max = deps.images.maxDimension;
  const route = createRoute({
    method: "get",
    path: "/",
    tags: ["search"],
    summary: "Resized, optimised article image (`image_url`)",
    description:
      `Append \`&w=<width>&h=<height>\` (or \`&width=&height=\`; ${MIN_DIMENSION} to ${max}) to an \`image_url\`. ` +
      "With both, the image is cropped to fill the box (`fit=cover`, the default) or fitted inside it " +
      "(`fit=inside`); with one, the other follows the aspect ratio. Images are never enlarged. " +
      "webp when `Accept` includes `image/webp`, else PNG (transparent images) or JPEG.",
    request: {
      query: imageQuery(max),
    },
    responses: {
      200: {
        description: "The image",
        content: { "image/webp": { schema: z.any() }, "image/jpeg": { schema: z.any() } },
      },
      304: { description: "Not modified (If-None-Match)" },
      400: { description: "Bad `w`, `h` or `fit`" },
      404: { description: "Unknown or tampered image reference" },
      502: { description: "The image origin failed or sent no usable image" },
      429: {
        description: "Over `IMAGE_RENDERS_PER_MIN_PER_ADDRESS` new renders (sizes not cached yet) a minute from this " +
          "client address (`Retry-After`); cached sizes are still served",
        content: { "application/json": { schema: z.object({ message: z.string() }) } },
      },
      503: { description: "Too many resize jobs waiting; `Retry-After` says when to retry" },
    },
  });
  const app = familyApp("message", deps.log);
  app.openapi(route, async (c) => {
    const q = c.req.valid("query");
    const ref = await deps.links.verifyImage(q.src);
    if (!ref) throw notFound("Image not found");
    const request = {
      src: ref.src,
      width: q.w ?? q.width,
      height: q.h ?? q.height,
      fit: q.fit,
      webp: acceptsWebp(c.req.header("accept")),
    };
    const headers = { "cache-control": "public, max-age=86400", vary: "Accept", "x-content-type-options": "nosniff" };
    const etag = `"${await deps.images.key(request)}"`;
    const ifNoneMatch = c.req.header("if-none-match");
    if (ifNoneMatch && ifNoneMatch.split(",").map((t) => t.trim().replace(/^W\//, "")).includes(etag)) {
      return c.body(null, 304, { ...headers, etag });
    }
    // Every size is a resize and a cache file: one client walking through sizes would keep the
    // resize slots busy and churn the cache, so renders (not cached answers) count per address.
    if (!(await deps.images.isCached(request))) {
      await enforcePublicLimit(deps.imageRenderLimiter, "address", limitAddress(c, deps.config.trustProxy));
    }
    try {
      const image = await deps.images.render(request);
      return c.body(image.bytes as Uint8Array<ArrayBuffer>, 200, {
        ...headers,
        etag: image.etag,
        "content-type": image.contentType,
        "x-cache": image.cache.toUpperCase(),
      });
    } catch (err) {
      if (err instanceof ImageOriginError) {
        throw new AppError("upstream_failed", "bad_gateway", err.message, { cause: err.cause });
      }
      if (err instanceof ImageBusyError) {
        throw new AppError("unavailable", "busy", err.message, { headers: { "retry-after": "1" } });
      }
      throw err;
    }
  });
  return app;
}
