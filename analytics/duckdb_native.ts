/**
 * DuckDB's Node-API addon (`duckdb.node`) links `libduckdb.so` through `RUNPATH $ORIGIN`. In a
 * `deno compile` binary the addon is extracted to a temp folder without the library, so the
 * binary ships `libduckdb.so` beside itself and we load it first: the dynamic linker then satisfies
 * the addon's `NEEDED libduckdb.so` by soname from the already-loaded copy.
 */
const handles: Deno.DynamicLibrary<Record<string, never>>[] = [];

const LIB_NAME = Deno.build.os === "darwin"
  ? "libduckdb.dylib"
  : Deno.build.os === "windows"
  ? "duckdb.dll"
  : "libduckdb.so";

/**
 * Loads the DuckDB shared library from `libPath`, or from beside the running executable when it
 * is there (the compiled-binary layout). Returns the path loaded, or null when nothing was needed.
 * @throws when `libPath` is given but cannot be loaded.
 */
export function preloadDuckDbLibrary(libPath?: string): string | null {
  const candidate = libPath ?? besideExecutable();
  if (!candidate) return null;
  handles.push(Deno.dlopen(candidate, {}));
  return candidate;
}

function besideExecutable(): string | null {
  const exe = Deno.execPath();
  const path = exe.slice(0, exe.lastIndexOf("/") + 1) + LIB_NAME;
  try {
    return Deno.statSync(path).isFile ? path : null;
  } catch {
    return null;
  }
}
