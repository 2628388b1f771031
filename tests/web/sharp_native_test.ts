import assert from "node:assert/strict";
import { runFreshProbe } from "../_basics.ts";
import { preloadVipsLibrary } from "../../core/images/sharp_native.ts";

const ADDON_DIR = new URL(
  "../../node_modules/.deno/@img+sharp-linux-x64@0.35.5/node_modules/@img/sharp-linux-x64/lib/",
  import.meta.url,
);
const VIPS_DIR = new URL(
  "../../node_modules/.deno/@img+sharp-libvips-linux-x64@1.3.4/node_modules/@img/sharp-libvips-linux-x64/lib/",
  import.meta.url,
);

Deno.test({
  name: "preloadVipsLibrary() lets sharp's addon load without libvips at its RUNPATH (the compiled-binary layout)",
  ignore: Deno.build.os !== "linux" || Deno.build.arch !== "x86_64",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "sharp-layout-" });
    try {
      const lib = [...Deno.readDirSync(VIPS_DIR)].find((e) => /^libvips-cpp\.so/.test(e.name))!.name;
      await Deno.mkdir(`${dir}/addon`);
      await Deno.mkdir(`${dir}/bin`);
      await Deno.copyFile(new URL("sharp-linux-x64-0.35.5.node", ADDON_DIR), `${dir}/addon/sharp.node`);
      await Deno.copyFile(new URL(lib, VIPS_DIR), `${dir}/bin/${lib}`);
      const probe = (...args: string[]) => runFreshProbe(new URL("./_sharp_layout_probe.ts", import.meta.url), ...args);
      assert.equal(await probe(`${dir}/addon/sharp.node`), "failed", "without the preload the addon cannot load");
      assert.equal(await probe(`${dir}/addon/sharp.node`, `${dir}/bin/${lib}`), "loaded");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("preloadVipsLibrary() is a no-op under `deno run` and fails loudly for a wrong path", () => {
  assert.equal(preloadVipsLibrary(), null);
  assert.throws(() => preloadVipsLibrary("/nonexistent/libvips-cpp.so.8"));
});
