import assert from "node:assert/strict";
import { dashboardIsBuilt } from "../../routes/analytics/dashboard/build.ts";

/** Whether Deno's bundler (esbuild, an npm package fetched on first use) is in the npm cache. */
async function bundlerCached(): Promise<boolean> {
  const info = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stdout: "piped", stderr: "null" })
    .output();
  try {
    const { npmCache } = JSON.parse(new TextDecoder().decode(info.stdout)) as { npmCache: string };
    for await (const _ of Deno.readDir(`${npmCache}/registry.npmjs.org/@esbuild`)) return true;
  } catch { /* no cache */ }
  return false;
}

Deno.test({
  name: "dashboard.js is the build of routes/analytics/dashboard/client (deno task dashboard:build --check; " +
    "needs the bundler cached)",
  ignore: !(await bundlerCached()),
  async fn() {
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
