import assert from "node:assert/strict";
import {
  denoTestArgs,
  missingNeeds,
  NEEDS,
  onPath,
  SLOW_FIRST,
  suiteFiles,
  TEST_PERMISSIONS,
  testJobs,
} from "../../tools/test.ts";

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

Deno.test("tools/test.ts denoTestArgs(): --no-check --parallel, the suite's permissions, the suite's files unless a path is given", async () => {
  const fixed = ["test", ...TEST_PERMISSIONS, "--no-check", "--parallel"];
  const suite = () => Promise.resolve(["tests/slow_test.ts", "tests/a_test.ts"]);
  assert.deepEqual(await denoTestArgs([], suite), [...fixed, "tests/slow_test.ts", "tests/a_test.ts"]);
  // A flag's value that is no path keeps the whole suite.
  assert.deepEqual(
    await denoTestArgs(["--filter", "trending"], suite),
    [...fixed, "--filter", "trending", "tests/slow_test.ts", "tests/a_test.ts"],
  );
  // A path replaces the default files, flags pass through in order.
  assert.deepEqual(
    await denoTestArgs(["tests/foundation/", "--filter", "trending"], suite),
    [...fixed, "tests/foundation/", "--filter", "trending"],
  );
});

Deno.test("tools/test.ts suiteFiles(): every test file deno test would find, the slow ones first in their order, then alphabetical", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-suite-" });
  try {
    for (const dir of ["a", "b/c"]) await Deno.mkdir(`${root}/${dir}`, { recursive: true });
    for (
      const file of ["a/x_test.ts", "a/y.test.mts", "b/c/test.js", "b/z_test.ts", "b/_helpers.ts", "b/c/data.json"]
    ) {
      await Deno.writeTextFile(`${root}/${file}`, "");
    }
    const files = await suiteFiles(root, [`${root}/b/z_test.ts`, `${root}/gone_test.ts`, `${root}/a/x_test.ts`]);
    assert.deepEqual(files, [
      `${root}/b/z_test.ts`,
      `${root}/a/x_test.ts`,
      `${root}/a/y.test.mts`,
      `${root}/b/c/test.js`,
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("tools/test.ts SLOW_FIRST names files that exist, each once (a renamed file is not left behind)", async () => {
  assert.equal(new Set(SLOW_FIRST).size, SLOW_FIRST.length);
  const suite = new Set(await suiteFiles());
  for (const path of SLOW_FIRST) assert.ok(suite.has(path), `${path} is not a test file of the suite`);
});

Deno.test("tools/test.ts testJobs(): one more file at a time than cores, unless DENO_JOBS says a count", () => {
  const none = () => undefined;
  assert.equal(testJobs(none, 2), "3");
  assert.equal(testJobs(none, 8), "9");
  assert.equal(testJobs((name) => name === "DENO_JOBS" ? "1" : undefined, 2), "1");
  // A value that is not a count is not passed on to deno test.
  assert.equal(testJobs((name) => name === "DENO_JOBS" ? "many" : undefined, 2), "3");
});
