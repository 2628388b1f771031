import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).href;

/** The project's own import graph from `deno info --json`: module -> the project modules it imports. */
async function importGraph(entry: string): Promise<Map<string, string[]>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL(entry, ROOT).pathname],
    stdout: "piped",
    stderr: "null",
  }).output();
  assert.ok(out.success, "deno info failed");
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string; dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[] }[];
  };
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
