import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { hasIdFormat, idPattern, idTime, isId, newId } from "../../core/ids.ts";

Deno.test("newId() makes <prefix>_ plus 26 lowercase base32 characters", () => {
  const clock = new FixedClock();
  for (const prefix of ["tn", "dm", "am", "wd", "cp", "pm"] as const) {
    const id = newId(prefix, clock);
    assert.match(id, new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`));
    assert.ok(isId(prefix, id));
  }
});

Deno.test("newId() ids sort by creation time and encode it", () => {
  const clock = new FixedClock("2026-01-01T00:00:00Z");
  const ids: string[] = [];
  for (let i = 0; i < 50; i++) {
    ids.push(newId("dm", clock));
    clock.advance(1);
  }
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(idTime(ids[0]!).toISOString(), "2026-01-01T00:00:00.000Z");
});

Deno.test("newId() ids made in the same millisecond are distinct (80 random bits)", () => {
  const clock = new FixedClock();
  const seen = new Set(Array.from({ length: 10_000 }, () => newId("am", clock)));
  assert.equal(seen.size, 10_000);
});

Deno.test("isId() rejects wrong prefixes, lengths and characters", () => {
  const id = newId("dm", new FixedClock());
  assert.equal(isId("am", id), false);
  assert.equal(isId("dm", id.slice(0, -1)), false);
  assert.equal(isId("dm", id + "0"), false);
  assert.equal(isId("dm", id.replace(/.$/, "U")), false);
  assert.equal(isId("dm", "dm_"), false);
});

Deno.test("hasIdFormat() takes newId() and hand-made ids, refuses other prefixes, symbols, empty and huge bodies", () => {
  const clock = new FixedClock();
  const good = [newId("dm", clock), "dm_news", "dm_A1", "dm_" + "a".repeat(64)];
  const bad = [
    "dm_",
    "am_news",
    "dm_has-dash",
    "dm_a b",
    "dm_x\n",
    " dm_news",
    "dm_" + "a".repeat(65),
    "dm_é",
    "DM_news",
  ];
  for (const id of good) assert.ok(hasIdFormat("dm", id) && idPattern("dm").test(id), id);
  for (const id of bad) assert.ok(!hasIdFormat("dm", id) && !idPattern("dm").test(id), id);
  assert.equal(hasIdFormat("dm", 42), false);
});
