import assert from "node:assert/strict";
import {
  dayIn,
  dayLabel,
  dayYearLabel,
  duration,
  fmt,
  minuteIn,
  pct,
  withoutScheme,
} from "../../routes/analytics/dashboard/client/format.ts";

Deno.test("dashboard format: counts get separators, percentages one decimal at most, non-numbers nothing", () => {
  assert.equal(fmt(1234567), "1,234,567");
  assert.equal(pct(12.345), "12.3%");
  assert.equal(pct(50), "50%");
  for (const f of [fmt, pct, duration]) {
    assert.equal(f(undefined), "");
    assert.equal(f(null), "");
    assert.equal(f("7"), "");
  }
});

Deno.test("dashboard format: durations in s, min, or min and s", () => {
  assert.equal(duration(42), "42 s");
  assert.equal(duration(180), "3 min");
  assert.equal(duration(185), "3 min 5 s");
});

Deno.test("dashboard format: days are named in UTC, with the year when asked", () => {
  const newYear = Date.parse("2027-01-01T00:00:00Z") / 1000;
  assert.equal(dayLabel(newYear), "1 Jan");
  assert.equal(dayYearLabel(newYear), "1 Jan 2027");
});

Deno.test("dashboard format: an instant's day and minute in a zone; an unknown zone is no day and throws for minutes", () => {
  const iso = "2026-03-01T23:30:00Z";
  assert.equal(dayIn("UTC", iso), "2026-03-01");
  assert.equal(dayIn("Asia/Tokyo", iso), "2026-03-02");
  assert.equal(dayIn("Not/AZone", iso), "");
  assert.equal(minuteIn("Asia/Tokyo", iso), "2026-03-02 08:30");
  assert.equal(minuteIn("America/New_York", iso), "2026-03-01 18:30");
  assert.throws(() => minuteIn("Not/AZone", iso), RangeError);
});

Deno.test("dashboard format: a URL is shown without its scheme", () => {
  assert.equal(withoutScheme("https://dailyledger.example/a"), "dailyledger.example/a");
  assert.equal(withoutScheme("http://x.example"), "x.example");
  assert.equal(withoutScheme("ftp://x.example"), "ftp://x.example");
});
