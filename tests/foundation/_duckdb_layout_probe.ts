// Run in a fresh process by duckdb_native_test.ts: loads `duckdb.node` from a folder without
// libduckdb.so, after preloading the library from another folder when asked to.
import { createRequire } from "node:module";
import { preloadDuckDbLibrary } from "../../analytics/duckdb_native.ts";

const [addon, lib] = Deno.args;
if (lib) preloadDuckDbLibrary(lib);
try {
  const binding = createRequire(import.meta.url)(addon!);
  console.log(typeof binding.open === "function" ? "loaded" : "no-binding");
} catch {
  console.log("failed");
}
