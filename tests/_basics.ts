/**
 * Test helpers that load nothing of the app: a test file that needs only these stays milliseconds
 * to load (tests/_helpers.ts, which builds a test world, loads the whole app graph).
 */

/**
 * Where tests keep the converted word-vector cache: one shared file per package version, so the
 * 300 MB package JSON is converted once per machine, not once per test.
 */
export const SHARED_EMBEDDINGS_CACHE = `${Deno.env.get("TMPDIR") ?? "/tmp"}/svc-test-shared/wink-sg-100d-1.1.0.v1.bin`;

/** Bearer header for a key. */
export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/**
 * Runs a probe script in a fresh `deno run` process (nothing loaded yet: native libraries,
 * module state) and returns its trimmed stdout.
 */
export async function runFreshProbe(script: URL, ...args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-ffi", "--allow-env", script.pathname, ...args],
    stdout: "piped",
    stderr: "null",
  }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

/**
 * `promise`, or a failure naming what did not happen once `ms` pass: a bound on waiting for an
 * event, so a test that misses it fails instead of hanging. The timer is cleared either way.
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string | (() => string)): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${ms} ms: ${typeof what === "string" ? what : what()}`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
