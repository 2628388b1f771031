import assert from "node:assert/strict";
import {
  denoTestArgs,
  missingNeeds,
  namesPath,
  NEEDS,
  onPath,
  suiteFiles,
  TEST_PERMISSIONS,
  testJobs,
} from "../../tools/test.ts";
import {
  fileSeconds,
  formatElapsed,
  formatSummary,
  groupEntry,
  groupsByTime,
  parseSummary,
  runGroups,
  UNHANDLED_GUARD,
  writeGroupEntries,
} from "../../tools/test_groups.ts";
import { fileTimesFromJunit } from "../../tools/test_times.ts";

/** A temp folder holding an executable named `name` and a non-executable `plain`. */
async function binDir(name: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "svc-bin-" });
  await Deno.writeTextFile(`${dir}/${name}`, "#!/bin/sh\n", { mode: 0o755 });
  await Deno.writeTextFile(`${dir}/plain`, "", { mode: 0o644 });
  return dir;
}

Deno.test("tools/test.ts onPath() finds an executable on PATH and not a plain file or a missing one", async () => {
  const dir = await binDir("haproxy");
  try {
    assert.equal(await onPath("haproxy", `/nonexistent:${dir}`), true);
    assert.equal(await onPath("plain", dir), false);
    assert.equal(await onPath("chromium", dir), false);
    assert.equal(await onPath("haproxy", ""), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tools/test.ts missingNeeds() names the Debian packages not on PATH; CHROMIUM_PATH stands for chromium", async () => {
  const dir = await binDir("openssl");
  try {
    const none = (_: string) => undefined;
    const missing = await missingNeeds(NEEDS, { env: none, path: dir });
    assert.deepEqual(missing.map((n) => n.debianPackage), ["chromium", "faketime", "haproxy"]);
    const withChromium = await missingNeeds(NEEDS, {
      env: (name) => name === "CHROMIUM_PATH" ? "/opt/chrome" : undefined,
      path: dir,
    });
    assert.deepEqual(withChromium.map((n) => n.debianPackage), ["faketime", "haproxy"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tools/test.ts denoTestArgs(): the suite's permissions, --no-check --parallel, then the user's flags and the files", () => {
  const fixed = ["test", ...TEST_PERMISSIONS, "--no-check", "--parallel"];
  assert.deepEqual(denoTestArgs([]), fixed);
  assert.deepEqual(
    denoTestArgs(["--filter", "trending"], ["tests/a_test.ts", "tests/b_test.ts"]),
    [...fixed, "--filter", "trending", "tests/a_test.ts", "tests/b_test.ts"],
  );
});

Deno.test("tools/test.ts namesPath(): a path replaces the whole suite; a flag's value does not", async () => {
  assert.equal(await namesPath([]), false);
  assert.equal(await namesPath(["--filter", "trending"]), false);
  assert.equal(await namesPath(["tests/foundation/", "--filter", "trending"]), true);
});

Deno.test("tools/test.ts suiteFiles(): every file deno test takes as a test, in alphabetical order", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-suite-" });
  try {
    for (const dir of ["a", "b/c"]) await Deno.mkdir(`${root}/${dir}`, { recursive: true });
    for (
      const file of ["b/z_test.ts", "a/y.test.mts", "b/c/test.js", "a/x_test.ts", "b/_helpers.ts", "b/c/data.json"]
    ) {
      await Deno.writeTextFile(`${root}/${file}`, "");
    }
    assert.deepEqual(await suiteFiles(root), [
      `${root}/a/x_test.ts`,
      `${root}/a/y.test.mts`,
      `${root}/b/c/test.js`,
      `${root}/b/z_test.ts`,
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("tools/test_groups.ts groupsByTime(): longest first, each to the least loaded group; every file once", () => {
  const seconds = { "slow": 10, "mid": 6, "five": 5, "four": 4 };
  const files = ["a", "four", "b", "slow", "five", "mid", "c"];
  const groups = groupsByTime(files, 3, { files: seconds, other: 1 });
  // slow (10) | mid (6) + a + b + c (1 each) = 9 | five (5) + four (4) = 9
  assert.deepEqual(groups, [["slow"], ["mid", "a", "b", "c"], ["five", "four"]]);
  assert.deepEqual(groups.flat().sort(), [...files].sort());
  // Never more groups than files, never an empty one.
  assert.deepEqual(groupsByTime(["a", "b"], 3, { files: {}, other: 1 }), [["a"], ["b"]]);
  assert.deepEqual(groupsByTime([], 3, { files: {}, other: 1 }), []);
});

Deno.test("tools/test_groups.ts fileSeconds(): the measured table names files of the suite (a renamed file is not left behind)", async () => {
  const { files, other } = await fileSeconds();
  assert.ok(other > 0 && Object.keys(files).length > 0);
  const suite = new Set(await suiteFiles());
  for (const [path, seconds] of Object.entries(files)) {
    assert.ok(suite.has(path), `${path} is not a test file of the suite`);
    assert.ok(seconds >= other, `${path}: a listed file is one of the slower ones`);
  }
});

Deno.test("tools/test_groups.ts parseSummary() reads deno test's last line; formatSummary() writes it back", () => {
  const plain = "ok | 816 passed (442 steps) | 0 failed (1m47s)";
  assert.deepEqual(parseSummary(plain), {
    passed: 816,
    passedSteps: 442,
    failed: 0,
    failedSteps: 0,
    ignored: 0,
    filteredOut: 0,
  });
  const colored = "\x1b[0m\x1b[32mok\x1b[0m | 3 passed | 0 failed \x1b[0m\x1b[38;5;245m(12ms)\x1b[0m";
  assert.equal(parseSummary(colored)?.passed, 3);
  const failed = parseSummary("FAILED | 5 passed (3 steps) | 2 failed (1 step) | 1 ignored | 4 filtered out (2s)")!;
  assert.deepEqual(failed, { passed: 5, passedSteps: 3, failed: 2, failedSteps: 1, ignored: 1, filteredOut: 4 });
  assert.equal(parseSummary("./tests/a_test.ts => a test ... ok (3ms)"), undefined);
  assert.equal(formatSummary(parseSummary(plain)!, 107_400), plain);
  assert.equal(
    formatSummary(failed, 2_100),
    "FAILED | 5 passed (3 steps) | 2 failed (1 step) | 1 ignored | 4 filtered out (2s)",
  );
  assert.deepEqual([formatElapsed(450), formatElapsed(12_900), formatElapsed(61_000)], ["450ms", "12s", "1m1s"]);
});

Deno.test("tools/test_groups.ts runGroups(): one deno test per group at once, one summary for all, a failure's report whole", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-groups-" });
  try {
    await Deno.writeTextFile(`${dir}/a_test.ts`, `Deno.test("a passes", () => {});`);
    await Deno.writeTextFile(
      `${dir}/b_test.ts`,
      `Deno.test("b has steps", async (t) => { await t.step("one", () => {}); await t.step("two", () => {}); });`,
    );
    await Deno.writeTextFile(`${dir}/c_test.ts`, `Deno.test("c fails", () => { throw new Error("c broke"); });`);
    const lines: string[] = [];
    const run = (groups: string[][]) =>
      runGroups(groups, (files) => ["test", "--no-check", "--parallel", ...files], {
        env: { NO_COLOR: "1", DENO_JOBS: "1" },
        write: (line) => lines.push(line),
        writeError: () => {},
      });

    assert.equal(await run([[`${dir}/a_test.ts`], [`${dir}/b_test.ts`]]), 0);
    assert.match(lines.at(-1)!, /^ok \| 2 passed \(2 steps\) \| 0 failed \(\d+(ms|s)\)$/);
    assert.equal(lines.filter((l) => parseSummary(l)).length, 1, "one summary line, not one a group");
    assert.ok(lines.some((l) => l.includes("a passes")) && lines.some((l) => l.includes("b has steps")));

    lines.length = 0;
    assert.notEqual(await run([[`${dir}/a_test.ts`], [`${dir}/c_test.ts`]]), 0);
    assert.match(lines.at(-1)!, /^FAILED \| 1 passed \| 1 failed /);
    const report = lines.findIndex((l) => /^\s*ERRORS\s*$/.test(l));
    assert.ok(report >= 0, "the failing group's report is printed");
    assert.ok(lines.slice(report).some((l) => l.includes("c broke")), "with the error");

    // A group that ends without a summary (here: a file that is not there) counts as a failure.
    lines.length = 0;
    const errors: string[] = [];
    const code = await runGroups([[`${dir}/a_test.ts`], [`${dir}/gone_test.ts`]], (files) => ["test", ...files], {
      env: { NO_COLOR: "1" },
      write: (line) => lines.push(line),
      writeError: (line) => errors.push(line),
    });
    assert.notEqual(code, 0);
    assert.match(lines.at(-1)!, /^FAILED \| 1 passed \| 1 failed /);
    assert.ok(errors.some((l) => /ended without a summary/.test(l)), "says which group gave no summary");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tools/test_groups.ts groupEntry(): one import a file, as file URLs in the group's order", () => {
  assert.equal(
    groupEntry(["tests/b_test.ts", "/abs/a test.ts", "tests/../x_test.ts"], "/repo"),
    'import "file:///repo/tests/b_test.ts";\n' +
      'import "file:///abs/a%20test.ts";\n' +
      'import "file:///repo/x_test.ts";\n' + UNHANDLED_GUARD,
  );
  assert.equal(groupEntry(["a_test.ts"], "/repo/"), 'import "file:///repo/a_test.ts";\n' + UNHANDLED_GUARD);
});

Deno.test("tools/test_groups.ts groupEntry(): a rejection a test leaves unhandled fails the group's last test, and the tests after it still run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-unhandled-" });
  try {
    await Deno.writeTextFile(
      `${dir}/a_test.ts`,
      `Deno.test("a leaves work behind", () => { Promise.reject(new Error("work closed under a test")); });`,
    );
    await Deno.writeTextFile(
      `${dir}/b_test.ts`,
      `Deno.test("b runs after it", async () => { await new Promise((r) => setTimeout(r, 20)); });`,
    );
    const groups = [[`${dir}/a_test.ts`, `${dir}/b_test.ts`]];
    const [entry] = await writeGroupEntries(groups, dir);
    const lines: string[] = [];
    const code = await runGroups(groups, () => ["test", "--no-check", entry!], {
      env: { NO_COLOR: "1" },
      write: (line) => lines.push(line),
      writeError: () => {},
    });
    assert.notEqual(code, 0);
    const out = lines.join("\n");
    assert.match(out, /b runs after it \.\.\. ok/);
    assert.match(out, /no test of this group left a promise rejection unhandled \.\.\. FAILED/);
    assert.match(out, /work closed under a test/);
    assert.match(lines.at(-1)!, /2 passed \| 1 failed/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tools/test_groups.ts writeGroupEntries(): a group's files run in one isolate, a module they share loads once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-entries-" });
  try {
    // shared.ts counts its loads, each test file counts itself: in one isolate b sees both files and one load.
    await Deno.writeTextFile(
      `${dir}/shared.ts`,
      `export const g = globalThis as { loads?: number; files?: number }; g.loads = (g.loads ?? 0) + 1;`,
    );
    for (const name of ["a", "b"]) {
      await Deno.writeTextFile(
        `${dir}/${name}_test.ts`,
        `import { g } from "./shared.ts";\ng.files = (g.files ?? 0) + 1;\n` +
          `Deno.test("${name} shares its isolate", () => { if (g.files !== 2 || g.loads !== 1) throw new Error("files " + g.files + ", loads " + g.loads); });`,
      );
    }
    const groups = [[`${dir}/a_test.ts`, `${dir}/b_test.ts`]];
    const [entry] = await writeGroupEntries(groups, dir);
    assert.equal(entry, `${dir}/group-1-of-1.ts`);
    const lines: string[] = [];
    const code = await runGroups(groups, () => ["test", "--no-check", entry!], {
      env: { NO_COLOR: "1" },
      write: (line) => lines.push(line),
      writeError: () => {},
    });
    assert.equal(code, 0, lines.join("\n"));
    // The two files' tests and the group's check for unhandled rejections.
    assert.match(lines.at(-1)!, /^ok \| 3 passed \| 0 failed /);
    assert.ok(lines.some((l) => l.includes("a shares its isolate")) && lines.some((l) => l.includes("b shares")));
    // The same files an isolate each (TEST_ISOLATION=file): each sees itself alone.
    assert.notEqual(
      await runGroups(groups, (files) => ["test", "--no-check", ...files], { writeError: () => {}, write: () => {} }),
      0,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tools/test_times.ts fileTimesFromJunit(): a file's time is the sum of its tests' times", () => {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="deno test" tests="3" failures="0" errors="0" time="1.5">
    <testsuite name="./tests/a_test.ts" tests="2" disabled="0" errors="0" failures="0">
        <testcase name="one" classname="./tests/a_test.ts" time="0.25" line="3" col="6">
        </testcase>
        <testcase name="two" classname="./tests/a_test.ts" time="1.000" line="9" col="6">
            <properties><property name="step[passed]" value="inner"/></properties>
        </testcase>
    </testsuite>
    <testsuite name="./tests/b_test.ts" tests="1" disabled="0" errors="0" failures="0">
        <testcase name="three" classname="./tests/b_test.ts" time="0.004" line="1" col="6">
        </testcase>
    </testsuite>
</testsuites>`;
  assert.deepEqual(fileTimesFromJunit(xml), { "tests/a_test.ts": 1.25, "tests/b_test.ts": 0.004 });
});

Deno.test("tools/test.ts testJobs(): one more file at a time than cores, unless DENO_JOBS says a count", () => {
  const none = () => undefined;
  assert.equal(testJobs(none, 2), "3");
  assert.equal(testJobs(none, 8), "9");
  assert.equal(testJobs((name) => name === "DENO_JOBS" ? "1" : undefined, 2), "1");
  // A value that is not a count is not passed on to deno test.
  assert.equal(testJobs((name) => name === "DENO_JOBS" ? "many" : undefined, 2), "3");
});
