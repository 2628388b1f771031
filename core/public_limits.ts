/**
 * The KV counters behind the limits of the public routes (routes/middleware/public_limits.ts
 * enforces them). Counted in KV, so every process behind a shared KV counts together.
 */
import type { Clock } from "./clock.ts";
import { FixedWindowLimiter } from "./rate_limit.ts";

/** Limits of `POST /v1/events` from the widget (configurable, docs/configuration.md). */
export interface EventLimitSettings {
  /** Events per minute per client address. */
  perAddressPerMin: number;
  /** Events per minute per widget. */
  perWidgetPerMin: number;
  /** Events per UTC day per widget. */
  perWidgetPerDay: number;
}

/** The KV counters behind the `/v1/events` limits. */
export interface EventLimiters {
  perAddress: FixedWindowLimiter;
  perWidget: FixedWindowLimiter;
  perWidgetDaily: FixedWindowLimiter;
}

/** The KV counter of renders (cache misses) of `GET /img` per client address per minute. */
export function imageRenderLimiter(kv: Deno.Kv, clock: Clock, perAddressPerMin: number): FixedWindowLimiter {
  return new FixedWindowLimiter(kv, clock, { scope: "img_render_address", limit: perAddressPerMin, windowS: 60 });
}

/**
 * The KV counter of the public storefront families with no limit of their own (payment status, the
 * checkout page, the catalog documents, an anonymous agent's reads and token exchange), per client
 * address per minute. Each family counts under its own key prefix (routes/storefront/public_reads.ts),
 * so an agent polling its `statusUrl` does not use up a human's checkout page.
 */
export function publicReadLimiter(kv: Deno.Kv, clock: Clock, perAddressPerMin: number): FixedWindowLimiter {
  return new FixedWindowLimiter(kv, clock, { scope: "public_reads_address", limit: perAddressPerMin, windowS: 60 });
}

/** Builds the `/v1/events` counters (the daily window is the UTC day). */
export function eventLimiters(kv: Deno.Kv, clock: Clock, s: EventLimitSettings): EventLimiters {
  return {
    perAddress: new FixedWindowLimiter(kv, clock, { scope: "events_address", limit: s.perAddressPerMin, windowS: 60 }),
    perWidget: new FixedWindowLimiter(kv, clock, { scope: "events_widget", limit: s.perWidgetPerMin, windowS: 60 }),
    perWidgetDaily: new FixedWindowLimiter(kv, clock, {
      scope: "events_widget_day",
      limit: s.perWidgetPerDay,
      windowS: 86_400,
    }),
  };
}
