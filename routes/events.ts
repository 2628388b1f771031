import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Deps } from "../composition.ts";
import { AppError, unprocessable } from "../core/errors.ts";
import type { IngestContext } from "../analytics/enrich.ts";
import type { AppEnv } from "./env.ts";
import { familyApp } from "./family.ts";
import { bodyReader } from "./middleware/body.ts";
import { cors } from "hono/cors";
import { WidgetOrigins } from "../core/widget_origins.ts";
import { widgetAllowsOrigin } from "../core/widget/mod.ts";
import { enforcePublicLimit, limitAddress, publicLimitExceeded } from "./middleware/public_limits.ts";
import { clientAddress } from "./storefront/client_address.ts";
import { actFor } from "./request_scope.ts";
import { boundPassed } from "../core/json_count.ts";
import { analyticsErrors } from "../analytics/errors.ts";

/**
 * How far back a widget batch's `ts` may go. The widget sends none (the service stamps arrival) and
 * retries within minutes; an older one on this public path is a forger's, who could otherwise rewrite
 * closed days' figures or stretch a visit's span past the heartbeat bound. A server batch, with the
 * tenant's key, may still go back 30 days.
 */
export const WIDGET_TS_MAX_AGE_MS = 10 * 60_000;

/** Most events one `POST /v1/events` may carry. */
export const MAX_EVENTS_PER_BATCH = 500;

/**
 * Body bytes a widget batch may take per event it is charged: a larger body costs its address one
 * event per this many bytes. A body is decoded whatever it holds: one event carrying 8 MiB of text
 * or 290,000 fields was decoded for the price of one event (+300 to +450 MiB for a dozen at once).
 * The widget's events are a few hundred bytes; the largest, a question with its whole answer (12,000
 * characters at most, up to about 36 KB in a script of three-byte characters), may cost up to 5.
 */
export const WIDGET_BYTES_PER_EVENT = 8 * 1024;

/**
 * Most JSON values a widget batch may hold: 500 events of every field are about 16,000. A body over
 * it is refused before it is decoded (413): one event of 290,000 unknown fields took 2 s and 80 MiB.
 */
export const MAX_WIDGET_BATCH_VALUES = MAX_EVENTS_PER_BATCH * 64;

const originDenied = () => new AppError("forbidden", "origin_not_allowed", "widget_id not found or origin not allowed");

const corsHeaders = (origin: string) => ({
  "Access-Control-Allow-Origin": origin,
  "Vary": "Origin",
});

const route = createRoute({
  method: "post",
  path: "/",
  tags: ["analytics"],
  summary: "Ingest a batch of analytics events (widget or server)",
  description: "From the Ask AI widget: no Authorization header; `widget_id` in the body and an `Origin` header in " +
    "the widget's allowed origins. From a server: `Authorization: Bearer <API_KEY>` of the owning tenant. Up to " +
    `${MAX_EVENTS_PER_BATCH} events; each is validated (422 naming the first bad field, nothing stored) and ` +
    "enriched, and the batch is in the write-ahead log before the 202 is sent. Widget batches count their events " +
    `(or one per ${WIDGET_BYTES_PER_EVENT / 1024} KiB of body, whichever is more) against limits per client ` +
    "address and per widget (per minute) and a daily quota per widget; over any of them the batch is refused " +
    "whole with 429 and `Retry-After`, and nothing of it is stored.",
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({
            widget_id: z.string().optional(),
            events: z.array(z.record(z.string(), z.unknown())),
          }),
        },
      },
    },
  },
  responses: {
    202: {
      description: "Stored in the write-ahead log",
      content: { "application/json": { schema: z.object({ accepted: z.number().int() }) } },
    },
    401: { description: "Malformed API key" },
    403: { description: "Unknown or revoked API key, unknown widget or origin not allowed" },
    413: {
      description: "Body too large, a widget batch of more JSON values than a batch can use, or a batch whose events " +
        "take more than the whole event log holds (`EVENTS_WAL_MAX_BYTES`)",
    },
    422: { description: "A field of an event is invalid" },
    429: {
      description: "Widget events over the per-address or per-widget limit or the widget's daily quota " +
        "(`Retry-After` in seconds); nothing of the batch is stored",
      content: { "application/json": { schema: z.object({ message: z.string() }) } },
    },
    503: {
      description: "`server_busy`: the write-ahead log is full (its flush has fallen behind) or too many large " +
        "bodies are being read at once; `Retry-After` says when to send the batch again, and nothing of it is stored",
      content: { "application/json": { schema: z.object({ message: z.string() }) } },
    },
  },
});

/**
 * Mounted at `/v1/events`: `POST` (+ its CORS preflight), the ingestion endpoint of the analytics
 * pipeline.
 */
export function createEventRoutes(
  deps: Pick<Deps, "apiKeys" | "repos" | "events" | "config" | "log" | "clock" | "eventLimiters" | "clientKeys">,
) {
  const limits = deps.eventLimiters;
  const app = familyApp("message", deps.log);
  // The preflight answers only origins some widget allows (it carries no widget id); the POST
  // then checks the origin against its own widget.
  const widgetOrigins = new WidgetOrigins(deps.repos, deps.clock);
  const addressOf = (c: Context<AppEnv>) => limitAddress(c, deps.config.trustProxy);
  /**
   * Charges a keyless batch's address `cost` events, or, when that does not fit, all that is left
   * (and is 429), so the next batch is refused before it is read.
   */
  const spend = async (address: string, cost: number) => {
    const hit = await limits.perAddress.hit(address, cost);
    if (hit.allowed) return;
    if (hit.remaining > 0) await limits.perAddress.hit(address, hit.remaining);
    throw publicLimitExceeded("address", hit.retryAfterS);
  };
  /**
   * A batch of too many events costs its address one more than the most a batch may carry (else
   * such batches cost nothing, and one address could have 8 MiB after 8 MiB read).
   */
  const spendOnOversize = (address: string) => spend(address, MAX_EVENTS_PER_BATCH + 1);
  /** Events a keyless batch's address was charged for its size before it was decoded. */
  const chargedForSize = new WeakMap<Context<AppEnv>, number>();
  app.use(
    "/",
    cors({
      origin: async (origin) => (await widgetOrigins.allows(origin)) ? origin : null,
      allowMethods: ["POST", "OPTIONS"],
      allowHeaders: ["content-type"],
      // navigator.sendBeacon sends a JSON batch with credentials, so its preflight must allow them;
      // the route reads no cookie (widget batches are authorised by widget id + origin only).
      credentials: true,
      // A widget backing off after a 429 needs to read when to retry.
      exposeHeaders: ["Retry-After"],
      maxAge: 600,
    }),
  );
  // Before the body is read (up to 8 MiB): the key of a server batch, or for a widget batch an
  // Origin that some widget allows. A sender that is neither is refused unread.
  app.use("/", async function eventSender(c, next) {
    if (c.req.method !== "POST") return await next();
    if (c.req.header("authorization") !== undefined) {
      const key = await deps.apiKeys.authenticate(c.req.header("authorization"));
      c.set("apiKey", key);
      actFor(c, key.tenantId);
    } else {
      const origin = c.req.header("origin");
      if (!origin || !(await widgetOrigins.allows(origin))) throw originDenied();
      const left = await limits.perAddress.peek(addressOf(c));
      if (!left.allowed) throw publicLimitExceeded("address", left.retryAfterS);
    }
    await next();
  });
  /**
   * A keyless batch's address is checked again once its body may be read: batches sent at once all
   * passed the first check before any was counted, then waited for the body budget (one address's
   * large bodies are read one at a time), so those past the limit by now are refused unread.
   */
  const beforeRead = async (c: Context<AppEnv>) => {
    if (!c.get("apiKey")) {
      const left = await limits.perAddress.peek(addressOf(c));
      if (!left.allowed) throw publicLimitExceeded("address", left.retryAfterS);
    }
    // No batch can be stored while the log is full: it is refused unread, and costs nothing.
    await deps.events.refuseWhenFull(c.get("apiKey")?.tenantId);
  };
  /**
   * Before a body is decoded (decoding takes several times its size: 8 MiB of small events took
   * about 40 MiB and 0.3 s): a batch of too many events is refused as soon as its 501st event is seen;
   * a keyless batch larger than {@link WIDGET_BYTES_PER_EVENT} is charged for its size first (the
   * handler charges only the events beyond that), and one of more values than a batch can use is
   * refused.
   */
  const beforeDecode = async (c: Context<AppEnv>, bytes: Uint8Array) => {
    const keyless = !c.get("apiKey");
    const passed = await boundPassed(bytes, {
      key: "events",
      maxElements: MAX_EVENTS_PER_BATCH,
      maxValues: keyless ? MAX_WIDGET_BATCH_VALUES : undefined,
    });
    if (passed === "elements") {
      if (keyless) await spendOnOversize(addressOf(c));
      throw eventCountInvalid();
    }
    if (!keyless) return;
    const sizeCost = Math.ceil(bytes.length / WIDGET_BYTES_PER_EVENT);
    if (sizeCost > 1) {
      await spend(addressOf(c), sizeCost);
      chargedForSize.set(c, sizeCost);
    }
    if (passed === "values") throw analyticsErrors.widget_batch_too_many_values({ max: MAX_WIDGET_BATCH_VALUES });
  };
  // A keyless batch's share of the body budget counts against its sender's address.
  app.use(
    "/",
    bodyReader({
      limit: deps.config.eventsMaxBodyBytes,
      holder: (c) => c.get("apiKey") ? undefined : addressOf(c),
      beforeRead,
      beforeDecode,
    }),
  );
  // The batch size is checked before the route schema reads each event: 8 MB of `0,` is 4 million
  // events, which the schema took seconds to refuse one by one (and overflowed the stack listing why).
  app.use("/", async function eventCount(c, next) {
    if (c.req.method === "POST") {
      const events = ((await c.req.json()) as { events?: unknown } | null)?.events;
      if (Array.isArray(events)) {
        // An oversized widget batch costs its address what it asked for (then 429), so the next one
        // is refused unread; the count itself is refused as the schema would.
        if (events.length > MAX_EVENTS_PER_BATCH && !c.get("apiKey")) await spendOnOversize(addressOf(c));
        checkEventCount(events);
      }
    }
    await next();
  });
  // bodyReader caps the size and checks the JSON; the route schema then checks the batch shape.
  const handler = async (c: Context<AppEnv>) => {
    const { events, widget_id } = (c.req as unknown as { valid(t: "json"): { events: unknown[]; widget_id?: string } })
      .valid("json");
    const key = c.get("apiKey");
    // Events charged here to a keyless batch's address beyond its size charge.
    let chargedHere = 0;
    if (!key) {
      // Anyone can name a public widget id and set an Origin header: the widget path is bounded
      // per address and per widget, counted in events, before anything is looked up or stored.
      const charged = chargedForSize.get(c) ?? 0;
      if (events.length > charged) {
        await enforcePublicLimit(limits.perAddress, "address", addressOf(c), events.length - charged);
        chargedHere = events.length - charged;
      }
    }
    let ctx: IngestContext;
    let origin: string | undefined;
    if (key) {
      ctx = { source: "server", tenantId: key.tenantId };
    } else {
      origin = c.req.header("origin");
      if (typeof widget_id !== "string" || !origin) throw originDenied();
      const address = clientAddress(c, deps.config.trustProxy);
      const widget = await deps.repos.widgets.get(widget_id);
      if (!widget || !widgetAllowsOrigin(widget, origin)) throw originDenied();
      await enforcePublicLimit(limits.perWidget, "widget", widget.id, events.length);
      await enforcePublicLimit(limits.perWidgetDaily, "widget_daily", widget.id, events.length);
      actFor(c, widget.tenantId);
      ctx = {
        source: "widget",
        widget,
        clientKey: await deps.clientKeys.of(address),
        maxAgeMs: WIDGET_TS_MAX_AGE_MS,
        answerEventId: (sessionId, requestId) => deps.clientKeys.answerEventId(widget.id, sessionId, requestId),
      };
    }
    let accepted: number;
    try {
      accepted = await deps.events.ingest(events, ctx);
    } catch (err) {
      // The event log filled up while the batch was read (503 `server_busy`, ours to fix): the handler's
      // charges are given back, so a widget retrying through a stopped flush does not spend its readers'
      // minute or its day's quota. The size charge is kept: the body was read and decoded (a full log
      // refuses the next one unread, before any charge).
      if (ctx.source === "widget" && err instanceof AppError && err.code === "server_busy") {
        await Promise.all([
          chargedHere > 0 ? limits.perAddress.refund(addressOf(c), chargedHere) : undefined,
          limits.perWidget.refund(ctx.widget.id, events.length),
          limits.perWidgetDaily.refund(ctx.widget.id, events.length),
        ]).catch(() => {});
      }
      throw err;
    }
    return c.json({ accepted }, 202, origin ? corsHeaders(origin) : {});
  };
  app.openapi(route, handler as never);
  return app;
}

function checkEventCount(events: unknown[]): void {
  if (events.length < 1 || events.length > MAX_EVENTS_PER_BATCH) throw eventCountInvalid();
}

const eventCountInvalid = () =>
  unprocessable(`events: must contain 1 to ${MAX_EVENTS_PER_BATCH} events`, "invalid_request");
