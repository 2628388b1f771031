/**
 * Heavy libraries load on the first use that needs them, not with the app: every test file that
 * builds a world, and every process that never takes a payment or parses HTML, skips their import time.
 */
import assert from "node:assert/strict";

/** Packages only a payment path (`mppx` alone is ~0.3 s to import) or an HTML parse needs. */
const LAZY_PACKAGES = /^npm:\/?(mppx|viem|@x402\/[a-z-]+|linkedom|@mozilla\/readability)@/;

interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier?: string }; isDynamic?: boolean }[];
}

/** Each root's walk, once per file: the three tests below ask about the same graph. */
const walks = new Map<string, Promise<readonly string[]>>();

/**
 * The npm packages and Node built-ins (`node:...`) a module loads at import time: static code
 * imports only (no `import type`, no `import()`). `deno info` over the app's graph runs once per root.
 */
function staticNpmImports(root: string): Promise<readonly string[]> {
  let walk = walks.get(root);
  if (!walk) walks.set(root, walk = walkStaticNpmImports(root));
  return walk;
}

async function walkStaticNpmImports(root: string): Promise<readonly string[]> {
  const out = await new Deno.Command(Deno.execPath(), { args: ["info", "--json", root], stdout: "piped" }).output();
  assert.ok(out.success, "deno info failed");
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: InfoModule[];
    redirects: Record<string, string>;
  };
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const npm = new Set<string>();
  const stack = [...info.roots];
  while (stack.length) {
    const at = stack.pop()!;
    const specifier = info.redirects[at] ?? at;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    if (specifier.startsWith("npm:") || specifier.startsWith("node:")) npm.add(specifier);
    for (const dep of modules.get(specifier)?.dependencies ?? []) {
      if (dep.code?.specifier && !dep.isDynamic) stack.push(dep.code.specifier);
    }
  }
  return [...npm].sort();
}

Deno.test("the app's static import graph (tests/_helpers.ts) holds no mppx, viem, x402, linkedom or Readability", async () => {
  const npm = await staticNpmImports(new URL("../_helpers.ts", import.meta.url).href);
  assert.ok(npm.some((s) => s.includes("hono@")), "the walk sees the app's static npm imports");
  assert.deepEqual(npm.filter((s) => LAZY_PACKAGES.test(s)), []);
});

Deno.test("the app's static import graph (tests/_helpers.ts) holds no DuckDB: it loads with the first analytics query", async () => {
  const npm = await staticNpmImports(new URL("../_helpers.ts", import.meta.url).href);
  assert.ok(npm.some((s) => s.includes("hono@")), "the walk sees the app's static npm imports");
  assert.deepEqual(npm.filter((s) => /^npm:\/?@duckdb\//.test(s)), []);
});

Deno.test("the app's static import graph (tests/_helpers.ts) holds no node:http, node:https or node:net: they load with the first pinned fetch", async () => {
  const imports = await staticNpmImports(new URL("../_helpers.ts", import.meta.url).href);
  assert.ok(imports.includes("node:crypto"), "the walk sees the app's static Node built-ins");
  assert.deepEqual(imports.filter((s) => /^node:(http|https|net|tls)$/.test(s)), []);
});
