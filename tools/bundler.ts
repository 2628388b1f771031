/**
 * Deno's bundler (`deno bundle`) runs esbuild, an npm package Deno fetches on first use. The build
 * checks of the widget and the dashboard need it; tests never reach the network, so the test
 * command caches it first (tools/test.ts), as it installs the Debian packages the suite drives.
 */

/** Whether the bundler's esbuild binary is in Deno's npm cache. */
export async function bundlerCached(): Promise<boolean> {
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  try {
    const { npmCache } = JSON.parse(new TextDecoder().decode(info.stdout)) as { npmCache: string };
    for await (const _ of Deno.readDir(`${npmCache}/registry.npmjs.org/@esbuild`)) return true;
  } catch {
    // no cache yet
  }
  return false;
}

/**
 * Caches the bundler by bundling a one-line module, which makes Deno fetch esbuild from npm.
 * Returns a one-line failure, or undefined when the bundler is (now) cached.
 */
export async function cacheBundler(): Promise<string | undefined> {
  if (await bundlerCached()) return undefined;
  console.error("test setup: caching Deno's bundler (esbuild, from npm) for the widget and dashboard build checks");
  const dir = await Deno.makeTempDir({ prefix: "bundler-cache-" });
  try {
    await Deno.writeTextFile(`${dir}/probe.ts`, "export const probe = 1;\n");
    const { success } = await new Deno.Command(Deno.execPath(), {
      args: ["bundle", "--quiet", "--platform", "browser", "--format", "iife", "-o", `${dir}/probe.js`, "probe.ts"],
      cwd: dir,
      stdin: "null",
      stdout: "null",
      stderr: "inherit",
    }).output();
    if (success && await bundlerCached()) return undefined;
    return "test setup: deno bundle could not fetch esbuild from npm: run `deno task widget:build --check` once online";
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
