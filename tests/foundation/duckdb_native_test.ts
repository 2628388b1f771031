import assert from "node:assert/strict";
import { runFreshProbe } from "../_basics.ts";
import { preloadDuckDbLibrary } from "../../analytics/duckdb_native.ts";

const BINDINGS = new URL(
  "../../node_modules/.deno/@duckdb+node-bindings-linux-x64@1.5.5-r.5/node_modules/@duckdb/node-bindings-linux-x64/",
  import.meta.url,
);

Deno.test({
  name: "preloadDuckDbLibrary() lets an addon without libduckdb.so beside it load (the compiled-binary layout)",
  ignore: Deno.build.os !== "linux" || Deno.build.arch !== "x86_64",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "duckdb-layout-" });
    try {
      // The layout of a compiled binary: the addon alone in one folder, the library in another.
      await Deno.mkdir(`${dir}/addon`);
      await Deno.mkdir(`${dir}/bin`);
      await Deno.copyFile(new URL("duckdb.node", BINDINGS), `${dir}/addon/duckdb.node`);
      await Deno.copyFile(new URL("libduckdb.so", BINDINGS), `${dir}/bin/libduckdb.so`);
      const probe = (...args: string[]) =>
        runFreshProbe(new URL("./_duckdb_layout_probe.ts", import.meta.url), ...args);
      // A fresh process each time: nothing has loaded libduckdb.so yet.
      assert.equal(await probe(`${dir}/addon/duckdb.node`), "failed", "without the preload the addon cannot load");
      assert.equal(await probe(`${dir}/addon/duckdb.node`, `${dir}/bin/libduckdb.so`), "loaded");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("preloadDuckDbLibrary() is a no-op under `deno run` (nothing beside the deno executable)", () => {
  assert.equal(preloadDuckDbLibrary(), null);
});

Deno.test("preloadDuckDbLibrary() fails loudly for a wrong explicit path", () => {
  assert.throws(() => preloadDuckDbLibrary("/nonexistent/libduckdb.so"));
});
