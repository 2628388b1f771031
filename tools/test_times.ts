/**
 * Measures each test file of the suite alone and writes the expected time `deno task test` groups
 * the files by (`tools/test_seconds.json`, read by `tools/test_groups.ts`). Run it on a quiet
 * machine when files were added or became slower; the grouping only balances better or worse, so
 * a stale table never fails a test.
 *
 * A file's expected time is the larger of its wall time alone and 1.5 times its CPU time alone:
 * the suite runs three files at a time on two cores, so a file that computes gets about two thirds
 * of a core, and a file that waits (a browser drawing, a timer) takes its wall time.
 *
 * @example
 * deno run -A tools/test_times.ts            # every file of tests/, about 3.5 min on 2 cores
 */
import { denoTestArgs, suiteFiles } from "./test.ts";

/** Files whose expected time is under this are left out of the table (they count its `other`). */
const LISTED_FROM_SECONDS = 2;

/** Wall and CPU seconds of one `deno test` over `file` alone (its children's CPU included). */
async function measure(file: string): Promise<{ wall: number; cpu: number }> {
  const started = performance.now();
  // bash's `time` reports the CPU of the command and its children (Chromium, peers) with no other tool.
  const out = await new Deno.Command("bash", {
    args: ["-c", 'TIMEFORMAT="%U %S"; time "$@" >/dev/null 2>&1', "bash", Deno.execPath(), ...denoTestArgs([], [file])],
    env: { DENO_JOBS: "1", NO_COLOR: "1" },
    stdout: "null",
    stderr: "piped",
  }).output();
  const wall = (performance.now() - started) / 1000;
  const [user, sys] = new TextDecoder().decode(out.stderr).trim().split("\n").at(-1)!.split(" ").map(Number);
  return { wall, cpu: (user ?? 0) + (sys ?? 0) };
}

if (import.meta.main) {
  const seconds: Record<string, number> = {};
  let others = 0, otherCount = 0;
  for (const file of await suiteFiles()) {
    const { wall, cpu } = await measure(file);
    const expected = Math.round(Math.max(wall, 1.5 * cpu) * 10) / 10;
    console.error(`${expected.toFixed(1).padStart(5)} s  ${file}`);
    if (expected >= LISTED_FROM_SECONDS) seconds[file] = expected;
    else (others += expected, otherCount++);
  }
  const sorted = Object.fromEntries(Object.entries(seconds).sort((a, b) => b[1] - a[1]));
  const other = otherCount ? Math.round((others / otherCount) * 100) / 100 : 0;
  await Deno.writeTextFile(
    new URL("./test_seconds.json", import.meta.url),
    JSON.stringify({ measured: new Date().toISOString().slice(0, 10), other, files: sorted }, null, 2) + "\n",
  );
}
