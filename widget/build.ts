/**
 * Builds the widget's browser scripts from ./src with Deno's bundler (esbuild):
 *
 *   deno task widget:build          writes widget/dist/loader.js and widget/dist/widget.js
 *   deno task widget:build --check  exits 1 when the committed files differ from a fresh build
 *
 * The built files are committed, so `deno task start`, `test` and `compile` need no bundler (nor
 * the network it may use to fetch esbuild); routes/widget/assets.ts imports them as text.
 */
const here = new URL(".", import.meta.url).pathname;
const TARGETS = [
  { entry: "src/loader.ts", out: "dist/loader.js" },
  { entry: "src/element.ts", out: "dist/widget.js" },
];

async function bundle(entry: string, out: string): Promise<void> {
  const cmd = new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", "--minify", "--platform", "browser", "--format", "iife", "-o", out, entry],
    cwd: here,
    stdout: "inherit",
    stderr: "inherit",
  });
  const { code } = await cmd.output();
  if (code !== 0) throw new Error(`deno bundle ${entry} failed (exit ${code})`);
}

if (import.meta.main) {
  const check = Deno.args.includes("--check");
  const tmp = check ? await Deno.makeTempDir({ prefix: "widget-build-" }) : null;
  let stale = 0;
  for (const t of TARGETS) {
    const out = tmp ? `${tmp}/${t.out.replace(/.*\//, "")}` : `${here}${t.out}`;
    await bundle(t.entry, out);
    if (tmp) {
      const [fresh, committed] = await Promise.all([Deno.readTextFile(out), Deno.readTextFile(`${here}${t.out}`)]);
      if (fresh !== committed) {
        console.error(`${t.out} is out of date: run deno task widget:build`);
        stale++;
      }
    } else {
      console.log(`${t.out} ${(await Deno.stat(out)).size} bytes`);
    }
  }
  if (tmp) await Deno.remove(tmp, { recursive: true });
  if (stale) Deno.exit(1);
}
