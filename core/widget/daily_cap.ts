import type { Clock } from "../clock.ts";

const DAY_MS = 86_400_000;
// Conflicting commits (other requests of the same widget) retried before refusing.
const MAX_COMMIT_TRIES = 32;

/** The outcome of taking one answer from a widget's daily allowance. */
export interface DailyCapResult {
  allowed: boolean;
  /** Answers given today, this one included when allowed. */
  used: number;
  /** Seconds until the next UTC midnight (>= 1), when the allowance starts again. */
  retryAfterS: number;
}

/**
 * Answers per widget per UTC day, counted in Deno KV at `["widget_answers", widgetId, day]`, so
 * every process behind a shared KV counts together. Taking an answer is check-and-set: never more
 * than the cap, even under concurrent requests. Entries expire a day after their day ends.
 */
export class DailyAnswerCap {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  /** Takes one answer of `widgetId`'s allowance of `cap` for today (UTC). */
  async take(widgetId: string, cap: number): Promise<DailyCapResult> {
    const nowMs = this.clock.now().getTime();
    const dayStart = Math.floor(nowMs / DAY_MS) * DAY_MS;
    const retryAfterS = Math.max(1, Math.ceil((dayStart + DAY_MS - nowMs) / 1000));
    const key = ["widget_answers", widgetId, new Date(dayStart).toISOString().slice(0, 10)];
    for (let i = 0; i < MAX_COMMIT_TRIES; i++) {
      const entry = await this.kv.get<number>(key);
      const used = entry.value ?? 0;
      if (used >= cap) return { allowed: false, used, retryAfterS };
      const res = await this.kv.atomic().check(entry).set(key, used + 1, { expireIn: 2 * DAY_MS }).commit();
      if (res.ok) return { allowed: true, used: used + 1, retryAfterS };
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(20, 2 ** i)));
    }
    // Endless contention on one widget is itself a flood: refuse rather than exceed the cap.
    return { allowed: false, used: cap, retryAfterS };
  }

  /** Answers given today so far. */
  async used(widgetId: string): Promise<number> {
    const dayStart = Math.floor(this.clock.now().getTime() / DAY_MS) * DAY_MS;
    const key = ["widget_answers", widgetId, new Date(dayStart).toISOString().slice(0, 10)];
    return (await this.kv.get<number>(key)).value ?? 0;
  }
}
