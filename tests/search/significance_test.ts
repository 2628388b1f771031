import assert from "node:assert/strict";
import { pairedGain } from "../../bench/_cv.ts";

Deno.test("pairedGain(): the same scores gain nothing, for sure", () => {
  const s = pairedGain([0.1, 0.5, 0.9], [0.1, 0.5, 0.9], { target: 0.02 });
  assert.deepEqual(s, { n: 3, mean: 0, low: 0, high: 0, atLeastTarget: 0, p: 1 });
});

Deno.test("pairedGain(): one constant gain has that gain as its whole interval", () => {
  const before = [0.2, 0.4, 0.6, 0.8];
  const s = pairedGain(before.map((b) => b + 0.05), before, { target: 0.02 });
  assert.ok(Math.abs(s.mean - 0.05) < 1e-12);
  assert.ok(Math.abs(s.low - 0.05) < 1e-12 && Math.abs(s.high - 0.05) < 1e-12);
  assert.equal(s.atLeastTarget, 1);
});

Deno.test("pairedGain(): the sign-flip p of 5 equal gains among 10 queries is 2 / 32", () => {
  // Exactly: of the 2^5 sign patterns of the 5 changed queries, only all + and all - are as far
  // from zero as the observed one.
  const after = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0];
  const s = pairedGain(after, new Array(10).fill(0), { resamples: 100_000 });
  assert.ok(Math.abs(s.p - 2 / 32) < 0.005, String(s.p));
});

Deno.test("pairedGain(): the interval narrows as queries agree, and refuses unpaired scores", () => {
  const before = Array.from({ length: 200 }, (_, i) => (i % 10) / 10);
  const noisy = pairedGain(before.map((b, i) => b + (i % 2 ? 0.1 : -0.06)), before);
  const steady = pairedGain(before.map((b, i) => b + (i % 2 ? 0.03 : 0.01)), before);
  assert.ok(Math.abs(noisy.mean - 0.02) < 1e-9 && Math.abs(steady.mean - 0.02) < 1e-9);
  assert.ok(steady.high - steady.low < noisy.high - noisy.low);
  assert.ok(noisy.low < 0.02 && noisy.high > 0.02);
  assert.throws(() => pairedGain([1, 2], [1]), /different queries/);
});
