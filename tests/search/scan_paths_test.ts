import assert from "node:assert/strict";
import { ScanHelper } from "../../core/search/index/scan_helper.ts";
import { describeScanPaths, VectorIndex } from "../../core/search/index/vector_index.ts";

const DIMS = 8;
const row = (i: number) => Float32Array.from({ length: DIMS }, (_, j) => Math.sin(i * 7 + j));

Deno.test("VectorIndex.scanPaths counts each scan's path: SIMD, SIMD split with the helper, the JavaScript loop", async () => {
  const helper = new ScanHelper({ minRows: 64 });
  try {
    assert.equal(await helper.started(), true);
    const simd = new VectorIndex(DIMS, 2, { helper });
    const js = new VectorIndex(DIMS, 2, { simd: false, helper: null });
    for (let i = 0; i < 100; i++) {
      simd.set(i, row(i));
      js.set(i, row(i));
    }
    const q = row(1000);
    simd.scan(q, 10); // below the helper's minimum: one thread
    simd.scan(q, 100); // split
    js.scan(q, 100);
    assert.deepEqual(simd.scanPaths, { simd: 1, simdWithHelper: 1, javascript: 0, plain: 0, ivf: 0 });
    assert.deepEqual(js.scanPaths, { simd: 0, simdWithHelper: 0, javascript: 1, plain: 0, ivf: 0 });
    const since = { ...simd.scanPaths };
    simd.scan(q, 10);
    assert.match(
      describeScanPaths(simd, since),
      /SIMD available; 0 scans SIMD split with the helper thread, 1 SIMD on one/,
    );
    assert.match(describeScanPaths(js), /SIMD NOT AVAILABLE; .* 1 JavaScript loop/);
    // A query without a vector scans nothing.
    simd.scan(null, 100);
    assert.equal(simd.scanPaths.simd, 2);
  } finally {
    helper.close();
  }
});
