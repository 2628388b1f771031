import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).href;

/** What `deno info --json` says of the modules these tests read. */
interface DenoInfo {
  modules: {
    specifier: string;
    dependencies?: { isDynamic?: boolean; code?: { specifier?: string }; type?: { specifier?: string } }[];
  }[];
}

/** Each set of entries' `deno info`, once per file: two tests below read the graph of main.ts. */
const infos = new Map<string, Promise<DenoInfo>>();

/** `deno info --json` over `entries` (paths from the project root), run once per file for the same entries. */
function denoInfo(entries: string[]): Promise<DenoInfo> {
  const paths = entries.map((e) => new URL(e, ROOT).pathname);
  const key = paths.join("\n");
  let info = infos.get(key);
  if (!info) {
    infos.set(
      key,
      info = new Deno.Command(Deno.execPath(), { args: ["info", "--json", ...paths], stdout: "piped", stderr: "null" })
        .output().then((out) => {
          assert.ok(out.success, "deno info failed");
          return JSON.parse(new TextDecoder().decode(out.stdout)) as DenoInfo;
        }),
    );
  }
  return info;
}

/** The project's own import graph from `deno info --json`: module -> the project modules it imports. */
async function importGraph(entry: string): Promise<Map<string, string[]>> {
  const info = await denoInfo([entry]);
  const graph = new Map<string, string[]>();
  for (const m of info.modules) {
    if (!m.specifier.startsWith(ROOT)) continue;
    const deps = (m.dependencies ?? []).map((d) => d.code?.specifier ?? d.type?.specifier)
      .filter((s): s is string => !!s && s.startsWith(ROOT));
    graph.set(m.specifier.slice(ROOT.length), deps.map((s) => s.slice(ROOT.length)));
  }
  return graph;
}

/** Groups of modules that import each other, directly or through others (Tarjan's SCCs). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

Deno.test("the service's modules import no circle, and core/ imports neither routes/, analytics/ nor the composition", async () => {
  const graph = await importGraph("main.ts");
  assert.ok(graph.size > 100, `only ${graph.size} modules`);
  assert.deepEqual(cycles(graph), []);
  const outward = [...graph].flatMap(([from, to]) =>
    from.startsWith("core/")
      ? to.filter((t) => /^(routes|analytics)\//.test(t) || t === "composition.ts").map((t) => `${from} -> ${t}`)
      : []
  );
  assert.deepEqual(outward, []);
});

Deno.test("cycles() finds a circle through three modules and none in a chain", () => {
  const circle = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]);
  assert.deepEqual(cycles(circle), [["a", "b", "c"]]);
  assert.deepEqual(cycles(new Map([["a", ["b"]], ["b", ["c"]], ["c", []]])), []);
});

/** The static imports of the service's modules: module -> the project modules it imports at load time. */
async function staticImports(entries: string[]): Promise<Map<string, string[]>> {
  const info = await denoInfo(entries);
  const graph = new Map<string, string[]>();
  for (const m of info.modules) {
    if (!m.specifier.startsWith(ROOT)) continue;
    const deps = (m.dependencies ?? []).filter((d) => !d.isDynamic)
      .flatMap((d) => [d.code?.specifier, d.type?.specifier])
      .filter((s): s is string => !!s && s.startsWith(ROOT));
    graph.set(m.specifier.slice(ROOT.length), [...new Set(deps.map((s) => s.slice(ROOT.length)))]);
  }
  return graph;
}

/** The room of a module under `core/<room>/`, else null (the kernel files at the top of core/ have none). */
const roomOf = (path: string): string | null => /^core\/([^/]+)\//.exec(path)?.[1] ?? null;

/** Imports that reach into another room past its face (`core/<room>/mod.ts`); dynamic imports are lazy seams. */
function pastFaces(graph: Map<string, string[]>): string[] {
  return [...graph].flatMap(([from, to]) =>
    to.filter((t) => {
      const room = roomOf(t);
      return room !== null && room !== roomOf(from) && t !== `core/${room}/mod.ts`;
    }).map((t) => `${from} -> ${t}`)
  );
}

Deno.test("the service's modules use another core room only through its mod.ts face", async () => {
  const graph = await staticImports(["main.ts"]);
  assert.deepEqual(pastFaces(graph), []);
});

Deno.test("pastFaces() flags an import into another room's internals, and allows faces, own rooms and the kernel", () => {
  const graph = new Map([
    ["routes/search.ts", ["core/search/mod.ts", "core/errors.ts", "core/search/engine.ts"]],
    ["core/answer/service.ts", ["core/answer/text.ts", "core/search/mod.ts", "core/links/tracking.ts"]],
  ]);
  assert.deepEqual(pastFaces(graph), [
    "routes/search.ts -> core/search/engine.ts",
    "core/answer/service.ts -> core/links/tracking.ts",
  ]);
});

Deno.test("docs/architecture.md lists exactly the rooms of core/, each with its mod.ts face", async () => {
  const doc = await Deno.readTextFile(new URL("docs/architecture.md", ROOT));
  const documented = [...doc.matchAll(/^\| `core\/([a-z_]+)\/` +\|/gm)].map((m) => m[1]).sort();
  const rooms: string[] = [];
  for await (const e of Deno.readDir(new URL("core/", ROOT))) if (e.isDirectory) rooms.push(e.name);
  assert.deepEqual(documented, rooms.sort());
  for (const room of rooms) {
    const face = await Deno.stat(new URL(`core/${room}/mod.ts`, ROOT)).catch(() => null);
    assert.ok(face?.isFile, `core/${room}/mod.ts`);
  }
});
