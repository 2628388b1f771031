/**
 * The commands the docs give must work from a clean clone: every `deno task` they name is one deno.json
 * defines, every script or file they run exists, the configuration table lists exactly the variables
 * the config reads, and a shell block uses only variables it, its page or `data/demo.env` sets.
 */
import assert from "node:assert/strict";
import { demoEnvText } from "../../fixtures/demo_env.ts";

const ROOT = new URL("../../", import.meta.url);

/** README.md, docs/**.md and bench/RESULTS.md, by path. */
async function docPages(): Promise<Map<string, string>> {
  const pages = new Map<string, string>();
  const read = async (path: string) => pages.set(path, await Deno.readTextFile(new URL(path, ROOT)));
  await read("README.md");
  await read("bench/RESULTS.md");
  for (const dir of ["docs/", "docs/api/"]) {
    for await (const e of Deno.readDir(new URL(dir, ROOT))) {
      if (e.isFile && e.name.endsWith(".md")) await read(dir + e.name);
    }
  }
  return pages;
}

const shellBlocks = (page: string) => [...page.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1]!);

Deno.test("the docs name only deno tasks deno.json defines", async () => {
  const tasks = Object.keys(JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))).tasks);
  const unknown: string[] = [];
  for (const [path, page] of await docPages()) {
    for (const [, name] of page.matchAll(/deno task ([a-z][\w:-]*)/g)) {
      if (!tasks.includes(name!)) unknown.push(`${path}: deno task ${name}`);
    }
  }
  assert.deepEqual(unknown, []);
});

Deno.test("the scripts and files the docs run or name exist", async () => {
  const missing: string[] = [];
  for (const [path, page] of await docPages()) {
    const named = page.matchAll(
      /(?<![\w/.$-])((?:bench|tools|cli|fixtures|tests|widget|analytics\/sql)\/[\w./-]+\.(?:ts|json|sql|sol|wat|jsonl|tsv))/g,
    );
    for (const [, file] of named) {
      if (!(await Deno.stat(new URL(file!, ROOT)).catch(() => null))) missing.push(`${path}: ${file}`);
    }
  }
  assert.deepEqual(missing, []);
});

Deno.test("docs/configuration.md lists exactly the variables the config reads", async () => {
  const source = (await Deno.readTextFile(new URL("core/config.ts", ROOT))) +
    (await Deno.readTextFile(new URL("core/payment_config.ts", ROOT)));
  // The keys of envSchema and paymentEnv: one per line, two spaces in, upper case.
  const read = [...source.matchAll(/^ {2}([A-Z][A-Z0-9_]+): /gm)].map((m) => m[1]!);
  const doc = await Deno.readTextFile(new URL("docs/configuration.md", ROOT));
  const listed = [...doc.matchAll(/^\| `([A-Z][A-Z0-9_]+)` +\|/gm)].map((m) => m[1]!);
  assert.ok(read.length > 50, "the schema's keys were found");
  assert.deepEqual([...new Set(listed)].sort(), [...new Set(read)].sort());
});

Deno.test("a doc's shell blocks use only variables they, their page or data/demo.env set", async () => {
  const demoEnv = demoEnvText({ apiKey: "ak_x", operatorKey: "op_x", ids: {} } as never, "http://127.0.0.1:8000");
  const fromDemo = [...demoEnv.matchAll(/^export (\w+)=/gm)].map((m) => m[1]!);
  const shell = ["HOME", "PATH", "RANDOM"];
  const unset: string[] = [];
  for (const [path, page] of await docPages()) {
    const blocks = shellBlocks(page);
    const assigned = blocks.flatMap((b) =>
      [...b.matchAll(/(?:^|[\s;(])(?:export )?([A-Za-z_]\w*)=/g)].map((m) => m[1]!)
    );
    const known = new Set([...fromDemo, ...shell, ...assigned]);
    for (const block of blocks) {
      // Quoted heredocs ('EOF') are not expanded by the shell.
      const expanded = block.replace(/<<'(\w+)'\n[\s\S]*?^\1$/gm, "");
      for (const [, name] of expanded.matchAll(/\$\{?([A-Za-z_]\w*)/g)) {
        if (!known.has(name!)) unset.push(`${path}: $${name}`);
      }
    }
  }
  assert.deepEqual([...new Set(unset)], []);
});
