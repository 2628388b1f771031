/**
 * Measures each test file of the suite the way `deno task test` runs it, and writes the expected
 * time `deno task test` groups the files by (`tools/test_seconds.json`, read by
 * `tools/test_groups.ts`). Run it on a quiet machine when files were added or became slower; the
 * grouping only balances better or worse, so a stale table never fails a test.
 *
 * The suite runs each group's files in one isolate (`groupEntry()`), where a file costs what its
 * tests take: the isolate and the modules the files share load once per group. So every file runs
 * here in one isolate too, one file at a time, and a file's time is the sum of its tests' times
 * from deno test's JUnit report.
 *
 * @example
 * deno run -A tools/test_times.ts            # every file of tests/, about 2.5 min on 2 cores
 */
import { denoTestArgs, suiteFiles } from "./test.ts";
import { groupEntry } from "./test_groups.ts";

/** Files whose time is under this are left out of the table (they count its `other`). */
const LISTED_FROM_SECONDS = 1;

/**
 * Seconds per test file from a JUnit report: each `<testsuite>` (a file, named `./path`) adds up
 * the `time` of its `<testcase>`s.
 * @example
 * fileTimesFromJunit('<testsuite name="./tests/a_test.ts"><testcase name="x" time="0.5"/></testsuite>')
 * // { "tests/a_test.ts": 0.5 }
 */
export function fileTimesFromJunit(xml: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const suite of xml.matchAll(/<testsuite\s+name="([^"]+)"[^>]*>([\s\S]*?)<\/testsuite>/g)) {
    const file = suite[1]!.replace(/^\.\//, "");
    let seconds = 0;
    for (const c of suite[2]!.matchAll(/<testcase\b[^>]*\btime="([\d.]+)"/g)) seconds += Number(c[1]);
    out[file] = (out[file] ?? 0) + seconds;
  }
  return out;
}

if (import.meta.main) {
  const dir = await Deno.makeTempDir({ prefix: "test-times-" });
  try {
    const entry = `${dir}/all.ts`;
    await Deno.writeTextFile(entry, groupEntry(await suiteFiles()));
    const report = `${dir}/report.xml`;
    const { success } = await new Deno.Command(Deno.execPath(), {
      args: denoTestArgs(["--reporter=dot", `--junit-path=${report}`], [entry]),
      env: { DENO_JOBS: "1", NO_COLOR: "1" },
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (!success) console.error("some tests failed: their times are still used");
    const times = fileTimesFromJunit(await Deno.readTextFile(report));
    const listed = Object.entries(times).filter(([, s]) => s >= LISTED_FROM_SECONDS).sort((a, b) => b[1] - a[1]);
    const rest = Object.values(times).filter((s) => s < LISTED_FROM_SECONDS);
    const other = rest.length ? Math.round((rest.reduce((a, b) => a + b, 0) / rest.length) * 100) / 100 : 0;
    await Deno.writeTextFile(
      new URL("./test_seconds.json", import.meta.url),
      JSON.stringify(
        {
          measured: new Date().toISOString().slice(0, 10),
          other,
          files: Object.fromEntries(listed.map(([f, s]) => [f, Math.round(s * 10) / 10])),
        },
        null,
        2,
      ) + "\n",
    );
    for (const [f, s] of listed) console.error(`${s.toFixed(1).padStart(5)} s  ${f}`);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
