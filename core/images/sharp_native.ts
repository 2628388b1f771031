/**
 * sharp's Node-API addon links `libvips-cpp.so.<version>` through a RUNPATH relative to its own
 * folder (`$ORIGIN/../../sharp-libvips-<platform>/lib`). In a `deno compile` binary the addon is
 * extracted to a temp folder where that path does not exist, so, as with DuckDB
 * (analytics/duckdb_native.ts), the binary ships the library beside itself and we load it before
 * sharp: the dynamic linker then satisfies the addon's NEEDED entry by soname.
 */
import type sharpType from "sharp";

const handles: Deno.DynamicLibrary<Record<string, never>>[] = [];

/**
 * Loads libvips from `libPath`, or from beside the running executable when a `libvips-cpp.so*`
 * is there (the compiled-binary layout). Returns the path loaded, or null when nothing was needed.
 * @throws when `libPath` is given but cannot be loaded.
 */
export function preloadVipsLibrary(libPath?: string): string | null {
  const candidate = libPath ?? besideExecutable();
  if (!candidate) return null;
  handles.push(Deno.dlopen(candidate, {}));
  return candidate;
}

function besideExecutable(): string | null {
  if (Deno.build.os !== "linux") return null;
  const exe = Deno.execPath();
  const dir = exe.slice(0, exe.lastIndexOf("/") + 1);
  try {
    for (const e of Deno.readDirSync(dir)) {
      if (e.isFile && /^libvips-cpp\.so(\.\d+)*$/.test(e.name)) return dir + e.name;
    }
  } catch { /* unreadable folder: nothing to preload */ }
  return null;
}

let loaded: Promise<typeof sharpType> | undefined;

/**
 * sharp, imported on first use after the preload (importing the package loads the addon), so a
 * process that never resizes an image never loads libvips.
 */
export function loadSharp(libPath?: string): Promise<typeof sharpType> {
  loaded ??= (async () => {
    preloadVipsLibrary(libPath);
    return (await import("sharp")).default;
  })();
  return loaded;
}
