/**
 * Builds the dashboard's script from the TypeScript modules in ./client with Deno's bundler
 * (esbuild), the way widget/build.ts builds the widget:
 *
 *   deno task dashboard:build          writes routes/analytics/dashboard/dashboard.js
 *   deno task dashboard:build --check  exits 1 when the committed file differs from a fresh build
 *
 * The built file is committed, so `deno task start`, `test` and `compile` need no bundler;
 * ../dashboard_page.ts imports it as text and serves it as /dashboard/assets/dashboard.js (hashed
 * URL, same CSP). uPlot is not bundled: the page loads it with its own script tag.
 */
const here = new URL(".", import.meta.url).pathname;
export const ENTRY = "client/main.ts";
export const OUT = "dashboard.js";

/** Bundles the client into `out` (a path relative to this folder, or absolute). */
export async function bundleDashboard(out: string): Promise<void> {
  const cmd = new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", "--minify", "--platform", "browser", "--format", "iife", "-o", out, ENTRY],
    cwd: here,
    stdout: "inherit",
    stderr: "inherit",
  });
  const { code } = await cmd.output();
  if (code !== 0) throw new Error(`deno bundle ${ENTRY} failed (exit ${code})`);
}

/** Whether the committed dashboard.js is a fresh build of ./client. */
export async function dashboardIsBuilt(): Promise<boolean> {
  const tmp = await Deno.makeTempDir({ prefix: "dashboard-build-" });
  try {
    await bundleDashboard(`${tmp}/${OUT}`);
    const [fresh, committed] = await Promise.all([Deno.readTextFile(`${tmp}/${OUT}`), Deno.readTextFile(here + OUT)]);
    return fresh === committed;
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

if (import.meta.main) {
  if (Deno.args.includes("--check")) {
    if (!await dashboardIsBuilt()) {
      console.error(`routes/analytics/dashboard/${OUT} is out of date: run deno task dashboard:build`);
      Deno.exit(1);
    }
  } else {
    await bundleDashboard(OUT);
    console.log(`routes/analytics/dashboard/${OUT} ${(await Deno.stat(here + OUT)).size} bytes`);
  }
}
