import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { FixedWindowLimiter } from "../rate_limit.ts";
import { DailyAnswerCap } from "./daily_cap.ts";

/** The counters that bound the public widget routes (docs/widget.md, "Limits"). */
export interface WidgetLimits {
  /** Requests per client address per window, over every widget. */
  perAddress: FixedWindowLimiter;
  /** Answers and recommendations per widget per window, over every address. */
  perWidget: FixedWindowLimiter;
  /** Answers per widget per UTC day. */
  dailyCap: DailyAnswerCap;
  /** The daily cap of a widget that sets none. */
  defaultDailyCap: number;
}

/** Builds the widget limits over KV (so every process counts together). */
export function createWidgetLimits(kv: Deno.Kv, clock: Clock, settings: Config["widget"]): WidgetLimits {
  return {
    perAddress: new FixedWindowLimiter(kv, clock, {
      scope: "rate_limit_widget_address",
      limit: settings.ratePerAddress,
      windowS: settings.rateWindowS,
    }),
    perWidget: new FixedWindowLimiter(kv, clock, {
      scope: "rate_limit_widget",
      limit: settings.ratePerWidget,
      windowS: settings.rateWindowS,
    }),
    dailyCap: new DailyAnswerCap(kv, clock),
    defaultDailyCap: settings.dailyAnswerCap,
  };
}
