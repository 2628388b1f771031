/**
 * The test command (`deno task test`): provisions what the suite needs, then runs `deno test`.
 *
 * On a machine that has only Deno, this is all the set-up: the Debian packages the suite drives
 * (Chromium, faketime, openssl, HAProxy) are installed with apt-get when missing, as root or
 * through `sudo -n`, and Deno's bundler is cached for the build checks (tools/bundler.ts); where that
 * cannot be done it fails with one line naming what to do.
 * The run itself is `deno test --no-check --parallel` (type-checking is `deno task check`, once), one
 * more file at a time than there are cores (`testJobs()`). The whole suite (no arguments) runs as
 * that many `deno test` processes over groups of files of about equal time (`tools/test_groups.ts`),
 * each group's files in one isolate (`TEST_ISOLATION=file`: an isolate per file); with arguments
 * (paths, `--filter`, a reporter) it is one `deno test`, an isolate per file.
 *
 * @example
 * deno task test                                   # the whole suite
 * deno task test tests/search/                     # one folder (paths replace the default tests/)
 * deno task test tests/search/ --filter trending   # deno test flags pass through
 */

import { cacheBundler } from "./bundler.ts";
import { fileSeconds, groupsByTime, runGroups, writeGroupEntries } from "./test_groups.ts";

/** A program the suite runs, and the Debian package that provides it. */
export interface Need {
  /** The executable looked up on PATH. */
  command: string;
  /** The Debian package to install when it is missing. */
  debianPackage: string;
  /** What needs it (said when it is installed). */
  usedBy: string;
  /** An environment variable that, when set, points at the program instead (then PATH is not asked). */
  overrideEnv?: string;
}

/** What the suite runs outside Deno; every one of these tests fails, never skips, without it. */
export const NEEDS: readonly Need[] = [
  {
    command: "chromium",
    debianPackage: "chromium",
    usedBy: "page tests (tests/_browser.ts)",
    overrideEnv: "CHROMIUM_PATH",
  },
  { command: "faketime", debianPackage: "faketime", usedBy: "running the suite at another date" },
  { command: "openssl", debianPackage: "openssl", usedBy: "the TLS test's certificate (tests/_tls.ts)" },
  { command: "haproxy", debianPackage: "haproxy", usedBy: "the shard-routing test (tests/cluster/)" },
];

/** `deno test` permissions of the suite (the task used to spell these out). */
export const TEST_PERMISSIONS = [
  "--allow-net",
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "--allow-ffi",
  "--allow-sys",
  "--allow-run",
];

/** True when `command` is an executable file in one of `path`'s folders. */
export async function onPath(command: string, path = Deno.env.get("PATH") ?? ""): Promise<boolean> {
  for (const dir of path.split(":")) {
    if (!dir) continue;
    try {
      const info = await Deno.stat(`${dir}/${command}`);
      if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return true;
    } catch {
      // not in this folder
    }
  }
  return false;
}

/** The needs that are missing here. */
export async function missingNeeds(
  needs: readonly Need[] = NEEDS,
  { env = (name: string) => Deno.env.get(name), path }: { env?: (name: string) => string | undefined; path?: string } =
    {},
): Promise<Need[]> {
  const missing: Need[] = [];
  for (const need of needs) {
    if (need.overrideEnv && env(need.overrideEnv)) continue;
    if (!(await onPath(need.command, path))) missing.push(need);
  }
  return missing;
}

/** The file names `deno test` takes as tests when given a folder (`{*_,*.,}test.{ts,tsx,mts,js,mjs,jsx}`). */
const TEST_FILE = /(^|[._])test\.(ts|tsx|mts|js|mjs|jsx)$/;

/** Every test file under `root`, in alphabetical order, as paths relative to the working directory. */
export async function suiteFiles(root = "tests"): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && TEST_FILE.test(entry.name)) found.push(path);
    }
  };
  await walk(root);
  return found.sort();
}

/** True when one of `args` names an existing path (then it replaces the whole suite). */
export async function namesPath(args: readonly string[]): Promise<boolean> {
  for (const arg of args) {
    if (arg.startsWith("-")) continue;
    try {
      await Deno.stat(arg);
      return true;
    } catch {
      // a flag's value, e.g. the pattern after --filter
    }
  }
  return false;
}

/**
 * The `deno test` arguments for the user's `args` and `files`: the suite's permissions,
 * `--no-check`, `--parallel`, then `args`, then `files`.
 */
export function denoTestArgs(args: readonly string[], files: readonly string[] = []): string[] {
  return ["test", ...TEST_PERMISSIONS, "--no-check", "--parallel", ...args, ...files];
}

/**
 * How many test files run at once (for the whole suite: how many groups): `DENO_JOBS` when set,
 * else one more than the cores. Many files spend part of their time waiting (a browser drawing, a
 * child process starting, a peer's timer), and a third file keeps both cores busy meanwhile: on 2
 * cores the suite took 1:54 in 2 groups, 1:45 in 3 and 1:48 in 4 (bench/RESULTS.md).
 */
export function testJobs(
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
  cores = navigator.hardwareConcurrency,
): string {
  const set = env("DENO_JOBS");
  if (set && /^[1-9]\d*$/.test(set)) return set;
  return String(Math.max(1, cores) + 1);
}

async function succeeds(cmd: string, args: string[]): Promise<boolean> {
  try {
    const { success } = await new Deno.Command(cmd, { args, stdin: "null", stdout: "null", stderr: "null" }).output();
    return success;
  } catch {
    return false;
  }
}

/** How to run apt-get here: directly as root, through `sudo -n`, or not at all (with the reason). */
async function aptRunner(): Promise<{ prefix: string[] } | { cannot: string }> {
  if (!(await onPath("apt-get"))) return { cannot: "apt-get is not available (not a Debian system)" };
  if (Deno.uid() === 0) return { prefix: [] };
  if (await onPath("sudo") && await succeeds("sudo", ["-n", "true"])) return { prefix: ["sudo", "-n"] };
  return { cannot: "installing needs root or password-less sudo" };
}

async function run(argv: string[]): Promise<boolean> {
  const [cmd, ...args] = argv;
  const { success } = await new Deno.Command(cmd!, {
    args,
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
    env: { DEBIAN_FRONTEND: "noninteractive" },
  }).output();
  return success;
}

/** Installs what is missing; returns a one-line failure, or undefined when everything is there. */
export async function provision(): Promise<string | undefined> {
  const missing = await missingNeeds();
  if (missing.length === 0) return undefined;
  const packages = missing.map((n) => n.debianPackage);
  const manual = `apt-get install -y ${packages.join(" ")}`;
  const runner = await aptRunner();
  if ("cannot" in runner) return `test setup: missing ${packages.join(", ")}; ${runner.cannot}: run \`${manual}\``;
  for (const need of missing) {
    console.error(`test setup: installing ${need.debianPackage} from Debian (${need.usedBy})`);
  }
  const ok = await run([...runner.prefix, "apt-get", "update", "-q"]) &&
    await run([...runner.prefix, "apt-get", "install", "-y", "-q", ...packages]);
  if (!ok) return `test setup: apt-get could not install ${packages.join(", ")}: run \`${manual}\``;
  const still = await missingNeeds(missing);
  if (still.length === 0) return undefined;
  // Debian puts some programs (haproxy) in /usr/sbin, which a user's PATH may not name.
  const sbin = still.length === 1 && await onPath(still[0]!.command, "/usr/sbin:/sbin")
    ? ": add /usr/sbin to PATH"
    : "";
  return `test setup: ${still.map((n) => n.command).join(", ")} still not on PATH after apt-get${sbin}`;
}

if (import.meta.main) {
  const failure = await provision() ?? await cacheBundler();
  if (failure) {
    console.error(failure);
    Deno.exit(1);
  }
  // Ctrl-C reaches the whole process group; wait for deno test to report and exit with its code.
  Deno.addSignalListener("SIGINT", () => {});
  if (Deno.args.length > 0) {
    // Paths or flags (a filter, a reporter): one deno test, over `tests/` unless paths are named.
    const child = new Deno.Command(Deno.execPath(), {
      args: denoTestArgs(Deno.args, await namesPath(Deno.args) ? [] : ["tests/"]),
      env: { DENO_JOBS: testJobs() },
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    Deno.exit((await child.status).code);
  }
  // The whole suite: one deno test per group of files of about equal time, each group's files in
  // one isolate unless TEST_ISOLATION=file (tools/test_groups.ts).
  const groups = groupsByTime(await suiteFiles(), Number(testJobs()), await fileSeconds());
  const env = { DENO_JOBS: "1" };
  if (Deno.env.get("TEST_ISOLATION") === "file") {
    Deno.exit(await runGroups(groups, (files) => denoTestArgs([], files), { env }));
  }
  const dir = await Deno.makeTempDir({ prefix: "test-groups-" });
  let code = 1;
  try {
    const entries = await writeGroupEntries(groups, dir);
    code = await runGroups(groups, (files) => denoTestArgs([], [entries[groups.indexOf(files)]!]), { env });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  Deno.exit(code);
}
