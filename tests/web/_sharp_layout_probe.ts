// Run in a fresh process by sharp_native_test.ts: loads sharp's addon from a folder without
// libvips beside it, after preloading the library from another folder when asked to.
import { createRequire } from "node:module";
import { preloadVipsLibrary } from "../../core/images/sharp_native.ts";

const [addon, lib] = Deno.args;
if (lib) preloadVipsLibrary(lib);
try {
  const binding = createRequire(import.meta.url)(addon!);
  console.log(typeof binding.libvipsVersion === "function" ? "loaded" : "no-binding");
} catch {
  console.log("failed");
}
