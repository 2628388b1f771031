import assert from "node:assert/strict";
import { oncePerKey } from "../../routes/once_per_key.ts";

Deno.test("oncePerKey() builds once per key, by the key function when given one", () => {
  let builds = 0;
  const byValue = oncePerKey((n: number) => ({ n, build: ++builds }));
  assert.equal(byValue(1), byValue(1));
  assert.notEqual(byValue(1), byValue(2));
  assert.equal(builds, 2);

  const byBounds = oncePerKey((b: { min: number; max: number }) => ({ ...b }), (b) => `${b.min} ${b.max}`);
  assert.equal(byBounds({ min: 1, max: 2 }), byBounds({ min: 1, max: 2 }), "equal bounds, one schema");
  assert.notEqual(byBounds({ min: 1, max: 2 }), byBounds({ min: 1, max: 3 }));
});
