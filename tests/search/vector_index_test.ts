import assert from "node:assert/strict";
import { dequantize, normalized, quantize, VectorIndex } from "../../core/search/index/vector_index.ts";
import { prng } from "../../fixtures/prng.ts";
import { TopK } from "../../core/search/index/topk.ts";

const DIMS = 20;

/** A vector as the service indexes it: through int8 storage. */
function stored(v: Float32Array): Float32Array {
  const { q, scale } = quantize(v);
  return dequantize(q, scale);
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
};

/** Rows that all lean one way (as averaged word vectors do), some empty. */
function world(seed: number, count: number) {
  const rand = prng(seed);
  const common = normalized(Float32Array.from({ length: DIMS }, () => rand() - 0.5));
  const rows = Array.from({ length: count }, (_, i) => {
    if (i % 97 === 7) return null;
    const v = Float32Array.from({ length: DIMS }, () => rand() - 0.5);
    for (let j = 0; j < DIMS; j++) v[j]! += 1.5 * common[j]!;
    return stored(v);
  });
  const query = normalized(Float32Array.from({ length: DIMS }, () => rand() - 0.5));
  return { rows, query, common };
}

/** The reference: f32 cosines of the rows and query with direction u projected out. */
function reference(rows: (Float32Array | null)[], query: Float32Array, u: Float32Array | null): number[] {
  const project = (v: Float32Array) => {
    if (!u) return normalized(v);
    const n = normalized(v), d = dot(n, u);
    return normalized(n.map((x, j) => x - d * u[j]!));
  };
  const q = project(query);
  return rows.map((r) => (r ? dot(project(r), q) : 0));
}

Deno.test("VectorIndex: the int8 SIMD scan equals the JavaScript scan and the f32 cosines, across growth", () => {
  const { rows, query } = world(5, 3000);
  const simd = new VectorIndex(DIMS, 2);
  const js = new VectorIndex(DIMS, 2, { simd: false });
  assert.equal(simd.simd, true);
  assert.equal(simd.stride, 32, "rows padded to 16 bytes");
  rows.forEach((r, i) => {
    simd.set(i, r);
    js.set(i, r);
  });
  const a = simd.scan(query, rows.length).slice(), b = js.scan(query, rows.length);
  const expected = reference(rows, query, null);
  for (let i = 0; i < rows.length; i++) {
    assert.ok(Math.abs(a[i]! - b[i]!) < 1e-6, `slot ${i}: SIMD ${a[i]} vs JS ${b[i]}`);
    assert.ok(Math.abs(a[i]! - expected[i]!) < 1e-4, `slot ${i}: ${a[i]} vs f32 ${expected[i]}`);
    assert.ok(Math.abs(a[i]! - simd.cosine(i, query)) < 1e-4);
  }
  assert.equal(a[7], 0, "an empty row");
  // Rows read back as the unit vectors they stand for.
  assert.ok(Math.abs(dot(simd.row(5), normalized(rows[5]!)) - 1) < 1e-6);
});

Deno.test("VectorIndex: with a common direction, the scan gives the cosines of the projected vectors (set before and after)", () => {
  const { rows, query, common } = world(11, 2500);
  for (const simd of [true, false]) {
    const index = new VectorIndex(DIMS, 16, { simd });
    // Half the rows before the direction is set, half after: both kinds get their coefficients.
    rows.slice(0, 1200).forEach((r, i) => index.set(i, r));
    const u = index.principalDirection(1200)!;
    assert.ok(Math.abs(dot(u, common)) > 0.9, "finds the shared direction");
    index.setDirection(u, 1200);
    rows.slice(1200).forEach((r, i) => index.set(1200 + i, r));
    index.clear(3);
    const got = index.scan(query, rows.length).slice();
    const expected = reference(rows.map((r, i) => (i === 3 ? null : r)), query, u);
    for (let i = 0; i < rows.length; i++) {
      assert.ok(Math.abs(got[i]! - expected[i]!) < 1e-4, `simd ${simd}, slot ${i}: ${got[i]} vs ${expected[i]}`);
    }
    assert.equal(got[3], 0, "a cleared row");
    // The plain scan spreads less: removal is doing something.
    const plain = reference(rows, query, null);
    assert.ok(Math.abs(plain[10]! - got[10]!) > 1e-3);
  }
});

Deno.test("VectorIndex: with keepFloats, vectors that are not int8 already keep exact f32 cosines; without, int8 ones", () => {
  const rand = prng(3);
  const rows = Array.from({ length: 50 }, () => normalized(Float32Array.from({ length: DIMS }, () => rand() - 0.5)));
  const index = new VectorIndex(DIMS, 4, { keepFloats: true });
  const plain = new VectorIndex(DIMS, 4);
  rows.forEach((r, i) => {
    index.set(i, r);
    plain.set(i, r);
  });
  const query = rows[0]!.map((x, j) => x + (j === 1 ? 0.5 : 0));
  const qn = normalized(query);
  const got = index.scan(qn, rows.length);
  rows.forEach((r, i) => assert.ok(Math.abs(got[i]! - dot(r, qn)) < 1e-6, `slot ${i}`));
  const approx = plain.scan(qn, rows.length);
  rows.forEach((r, i) => assert.ok(Math.abs(approx[i]! - dot(r, qn)) < 2e-2, `slot ${i}, int8`));
  assert.ok(rows.some((r, i) => Math.abs(approx[i]! - dot(r, qn)) > 1e-6), "int8 rows are not the f32 ones");
  // Replaced by an int8 vector, the row leaves the f32 side store and is scanned as int8.
  index.set(0, stored(rows[1]!));
  assert.ok(Math.abs(index.scan(qn, rows.length)[0]! - dot(rows[1]!, qn)) < 1e-2);
  assert.deepEqual([...index.row(1)].map((x) => Math.round(x * 1e5)), [...rows[1]!].map((x) => Math.round(x * 1e5)));
});

Deno.test("VectorIndex.best(): the top k of the last scan from its block maxima equals one pass over every cosine", () => {
  const { rows, query } = world(29, 5_037);
  // Repeated rows: ties across blocks must break toward the lower slot, as the full pass does.
  for (let i = 3000; i < 3100; i++) rows[i] = rows[i - 2000]!;
  for (const simd of [true, false]) {
    const index = new VectorIndex(DIMS, 64, { simd });
    rows.forEach((r, i) => index.set(i, r));
    const cos = index.scan(query, rows.length);
    for (const k of [1, 9, 50, 100, 200]) {
      const full = new TopK(k);
      for (let s = 0; s < cos.length; s++) full.push(s, cos[s]!);
      assert.deepEqual(index.best(cos, k), full.drain(), `simd ${simd}, k ${k}`);
    }
    // Fewer rows than a block, and more wanted than there are blocks.
    const small = index.scan(query, 40);
    const all = new TopK(60);
    for (let s = 0; s < 40; s++) all.push(s, small[s]!);
    assert.deepEqual(index.best(small, 60), all.drain());
    // Only the last scan's own output is answered.
    assert.equal(index.best(cos, 9), null);
    assert.equal(index.best(Float32Array.from(small), 9), null);
  }
});

Deno.test("SIMD blockMax: the maximum of every block of 64 floats, wherever in the block it lies", async () => {
  const { createSimdScan, MAX_BLOCK } = await import("../../core/search/index/simd.ts");
  const kernel = createSimdScan(2)!;
  const floats = new Float32Array(kernel.memory.buffer, 0, 64 * MAX_BLOCK);
  const rand = prng(8);
  for (let i = 0; i < floats.length; i++) floats[i] = rand() - 0.5;
  // Block b holds its maximum at position b.
  for (let b = 0; b < 64; b++) floats[b * MAX_BLOCK + b] = 1 + b;
  kernel.blockMax(0, 64, floats.byteLength);
  const maxima = new Float32Array(kernel.memory.buffer, floats.byteLength, 64);
  assert.deepEqual([...maxima], Array.from({ length: 64 }, (_, b) => 1 + b));
});

Deno.test("VectorIndex: a scan split over a helper thread equals the one-thread scan, across growth and a direction", async (t) => {
  const { ScanHelper } = await import("../../core/search/index/scan_helper.ts");
  const helper = new ScanHelper({ minRows: 64 });
  try {
    assert.equal(await helper.started(), true);
    const { rows, query, common } = world(11, 5001);
    const split = new VectorIndex(DIMS, 2, { helper });
    const alone = new VectorIndex(DIMS, 2, { helper: null });
    rows.forEach((r, i) => {
      split.set(i, r);
      alone.set(i, r);
    });
    for (const [name, u] of [["plain", null], ["with the common direction removed", common]] as const) {
      await t.step(name, () => {
        split.setDirection(u, rows.length);
        alone.setDirection(u, rows.length);
        for (const count of [63, 64, 1000, 5001]) {
          assert.equal(helper.splits(splitKernel(split), count), count >= 64);
          const a = split.scan(query, count), b = alone.scan(query, count);
          assert.deepEqual(a.slice(), b.slice(), `${count} rows`);
          assert.deepEqual(split.best(a, 9), alone.best(b, 9));
        }
      });
    }
    await t.step("a helper that is gone leaves the scan whole", () => {
      helper.close();
      const a = split.scan(query, rows.length).slice(), b = alone.scan(query, rows.length);
      assert.deepEqual(a, b.slice());
    });
  } finally {
    helper.close();
  }
});

// deno-lint-ignore no-explicit-any
const splitKernel = (index: VectorIndex) => (index as any).kernel;
