import assert from "node:assert/strict";
import { dashboardIsBuilt } from "../../routes/analytics/dashboard/build.ts";
import { bundlerCached } from "../../tools/bundler.ts";

Deno.test({
  name: "dashboard.js is the build of routes/analytics/dashboard/client (deno task dashboard:build --check)",
  async fn() {
    assert.ok(
      await bundlerCached(),
      "Deno's bundler is not cached: run the suite with deno task test, which caches it",
    );
    assert.equal(await dashboardIsBuilt(), true, "run deno task dashboard:build");
  },
});

Deno.test("the dashboard bundle is one classic script that uses uPlot's global and sets no HTML", async () => {
  const js = await Deno.readTextFile(new URL("../../routes/analytics/dashboard/dashboard.js", import.meta.url));
  // Loaded by a plain <script defer>: no module syntax, everything inside one function.
  assert.match(js, /^\(\(\)=>\{/);
  assert.doesNotMatch(js, /(^|[;}])\s*(import|export)\s/);
  // uPlot comes from its own asset (uplot.min.js), not a second copy inside this one.
  assert.match(js, /new uPlot\(/);
  assert.ok(js.length < 40_000, `${js.length} bytes`);
  // Data reaches the page as text only.
  for (const sink of ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"]) {
    assert.ok(!js.includes(sink), sink);
  }
});
