/**
 * Runs the whole suite as several `deno test` processes at once, each over a group of files of about
 * equal expected time, and prints one summary line for all of them.
 *
 * Why not one `deno test --parallel` over every file: it starts the files it is given in an order of
 * its own (neither the order given nor their cost), so a slow file may start last and run alone
 * while the other cores idle. Groups balanced by measured time (longest file first, each to the
 * group with the least time so far) end at about the same moment instead. Each group's files run
 * in one isolate ({@link groupEntry}).
 *
 * @example
 * const groups = groupsByTime(await suiteFiles(), 3, await fileSeconds());
 * const code = await runGroups(groups, (files) => ["test", "--no-check", "--parallel", ...files]);
 */

/**
 * Expected seconds of the suite's slower files, measured alone by `tools/test_times.ts`
 * (`tools/test_seconds.json`): `files` for those of 2 s or more, `other` for each of the rest.
 * Only the grouping depends on it: a file not listed counts `other`, a listed file that is gone is
 * ignored.
 */
export interface FileSeconds {
  other: number;
  files: Readonly<Record<string, number>>;
}

/** The measured table (`tools/test_seconds.json`). */
export async function fileSeconds(): Promise<FileSeconds> {
  const table = JSON.parse(await Deno.readTextFile(new URL("./test_seconds.json", import.meta.url)));
  return { other: Number(table.other) || 1, files: table.files ?? {} };
}

/**
 * Splits `files` into at most `count` groups of about equal expected time: longest first, each to
 * the group with the least time so far (Graham's LPT). Ties keep the files' order.
 */
export function groupsByTime(files: readonly string[], count: number, seconds: FileSeconds): string[][] {
  const cost = (file: string) => seconds.files[file] ?? seconds.other;
  const groups = Array.from({ length: Math.max(1, Math.min(count, files.length)) }, () => ({
    files: [] as string[],
    total: 0,
  }));
  const longestFirst = files.map((file, at) => ({ file, at })).sort((a, b) =>
    cost(b.file) - cost(a.file) || a.at - b.at
  );
  for (const { file } of longestFirst) {
    let least = groups[0]!;
    for (const group of groups) if (group.total < least.total) least = group;
    least.files.push(file);
    least.total += cost(file);
  }
  return groups.map((g) => g.files).filter((g) => g.length > 0);
}

/**
 * The module that runs a group's test files in one isolate: it imports each file, so their tests
 * register in the files' order, and what the files share (the app's module graph, Hono, zod, the
 * word vectors) loads once per group instead of once per file. A file alone costs about 0.1 s of
 * CPU for its isolate and 0.2 s more to load the app; over the suite's 200-odd files that was a
 * quarter of its CPU (bench/RESULTS.md). The price is isolation: files of a group share globals,
 * so a test restores what it changes (it must anyway: tests in a file share them too), and
 * `TEST_ISOLATION=file` runs every file in an isolate of its own.
 * @param files paths of test files, relative to `cwd` or absolute
 * @param cwd the folder relative paths start from (default: the working directory)
 * @example
 * groupEntry(["tests/a_test.ts"], "/repo") // 'import "file:///repo/tests/a_test.ts";\n' + UNHANDLED_GUARD
 */
export function groupEntry(files: readonly string[], cwd = Deno.cwd()): string {
  const base = new URL(`file://${cwd.endsWith("/") ? cwd : `${cwd}/`}`);
  return files.map((file) => `import ${JSON.stringify(new URL(file, base).href)};\n`).join("") + UNHANDLED_GUARD;
}

/**
 * The end of every {@link groupEntry}: a promise rejected with nobody left to catch it (a test that
 * failed with work still pending, whose work is then closed under it) would stop the whole group's
 * isolate and cancel every test after it, where an isolate of its own stops only that file. It is
 * kept instead, and the group's last test fails with it, its stack naming where it came from.
 */
export const UNHANDLED_GUARD = `
const unhandled: unknown[] = [];
globalThis.addEventListener("unhandledrejection", (event) => {
  event.preventDefault();
  unhandled.push(event.reason);
});
Deno.test("no test of this group left a promise rejection unhandled", () => {
  if (unhandled.length > 0) throw new AggregateError(unhandled, \`\${unhandled.length} promise rejection(s) left unhandled\`);
});
`;

/**
 * Writes one {@link groupEntry} module per group under `dir`.
 * @returns the entry paths, one per group, in the groups' order
 */
export async function writeGroupEntries(groups: readonly string[][], dir: string): Promise<string[]> {
  return await Promise.all(groups.map(async (files, i) => {
    const path = `${dir}/group-${i + 1}-of-${groups.length}.ts`;
    await Deno.writeTextFile(path, groupEntry(files));
    return path;
  }));
}

/** The counts of a `deno test` summary line. */
export interface Summary {
  passed: number;
  passedSteps: number;
  failed: number;
  failedSteps: number;
  ignored: number;
  filteredOut: number;
}

// deno test colours its output unless NO_COLOR is set.
// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;
const SUMMARY = /^(ok|FAILED) \| \d+ passed/;

/**
 * The counts of `line` when it is the summary `deno test` ends with
 * (`ok | 816 passed (442 steps) | 0 failed (1m47s)`), else undefined.
 */
export function parseSummary(line: string): Summary | undefined {
  const plain = line.replace(ANSI, "").trim();
  if (!SUMMARY.test(plain)) return undefined;
  const count = (re: RegExp, group = 1) => Number(re.exec(plain)?.[group] ?? 0);
  return {
    passed: count(/(\d+) passed/),
    passedSteps: count(/\d+ passed \((\d+) steps?\)/),
    failed: count(/(\d+) failed/),
    failedSteps: count(/\d+ failed \((\d+) steps?\)/),
    ignored: count(/(\d+) ignored/),
    filteredOut: count(/(\d+) filtered out/),
  };
}

/** Adds up the groups' summaries. */
export function addSummaries(summaries: readonly Summary[]): Summary {
  const sum: Summary = { passed: 0, passedSteps: 0, failed: 0, failedSteps: 0, ignored: 0, filteredOut: 0 };
  for (const s of summaries) for (const k of Object.keys(sum) as (keyof Summary)[]) sum[k] += s[k];
  return sum;
}

/** A duration the way `deno test` writes it: `450ms`, `12s`, `1m47s`. */
export function formatElapsed(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${s % 60}s`;
}

/** The summary line in `deno test`'s own form, which `.ci/run` reads. */
export function formatSummary(s: Summary, elapsedMs: number): string {
  const steps = (n: number) => n ? ` (${n} step${n === 1 ? "" : "s"})` : "";
  return [
    s.failed ? "FAILED" : "ok",
    `${s.passed} passed${steps(s.passedSteps)}`,
    `${s.failed} failed${steps(s.failedSteps)}`,
    ...(s.ignored ? [`${s.ignored} ignored`] : []),
    ...(s.filteredOut ? [`${s.filteredOut} filtered out`] : []),
  ].join(" | ") + ` (${formatElapsed(elapsedMs)})`;
}

async function eachLine(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let rest = "";
  for await (const chunk of stream) {
    const lines = (rest + decoder.decode(chunk, { stream: true })).split("\n");
    rest = lines.pop()!;
    for (const line of lines) onLine(line);
  }
  rest += decoder.decode();
  if (rest) onLine(rest);
}

/**
 * Runs one `deno test` per group at once (`argsFor(files)` its arguments) and passes their output
 * through line by line, except each one's summary; a group's failure report (from its `ERRORS`
 * line on) is printed whole when that group ends, not interleaved with the others' progress. Ends
 * with one summary line for all groups.
 * @returns the exit code: 0 when every group passed, else the first failing group's code
 */
export async function runGroups(
  groups: readonly string[][],
  argsFor: (files: string[]) => string[],
  { env = {}, write = console.log, writeError = console.error }: {
    env?: Record<string, string>;
    write?: (line: string) => void;
    writeError?: (line: string) => void;
  } = {},
): Promise<number> {
  const started = performance.now();
  const results = await Promise.all(groups.map(async (files) => {
    const child = new Deno.Command(Deno.execPath(), {
      args: argsFor(files),
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let summary: Summary | undefined;
    let report: string[] | undefined;
    await Promise.all([
      eachLine(child.stdout, (line) => {
        const counts = parseSummary(line);
        if (counts) summary = counts;
        else if (report) report.push(line);
        else if (/^\s*(ERRORS|FAILURES)\s*$/.test(line.replace(ANSI, ""))) report = [line];
        else write(line);
      }),
      eachLine(child.stderr, writeError),
    ]);
    const { code } = await child.status;
    for (const line of report ?? []) write(line);
    return { code, summary, files, elapsedMs: performance.now() - started };
  }));
  const summaries: Summary[] = [];
  for (const { code, summary, files } of results) {
    if (summary) summaries.push(summary);
    else {
      writeError(`deno test over ${files.length} files ended without a summary (exit code ${code})`);
      summaries.push({ passed: 0, passedSteps: 0, failed: 1, failedSteps: 0, ignored: 0, filteredOut: 0 });
    }
  }
  write("");
  // How evenly the groups ended: the suite takes as long as its slowest group.
  results.forEach(({ files, elapsedMs }, i) =>
    write(`group ${i + 1} of ${results.length}: ${files.length} files, ended after ${formatElapsed(elapsedMs)}`)
  );
  write(formatSummary(addSummaries(summaries), performance.now() - started));
  return results.find((r) => r.code !== 0)?.code ?? (summaries.some((s) => s.failed) ? 1 : 0);
}
