/**
 * Processes of the real service (`main.ts serve`) sharing one DATA_DIR (one KV file, one events
 * folder), for the cluster test, `deno task cluster` and the fault run. Every process started here
 * is tracked by PID and killed by PID, never by name.
 */

/** Where the repository is (main.ts). */
export const ROOT = new URL("..", import.meta.url).pathname;

/** The converted word vectors every test and bench shares (tests/_helpers.ts uses the same file). */
export const SHARED_VECTORS = Deno.env.get("EMBEDDINGS_CACHE_PATH") ??
  `${Deno.env.get("TMPDIR") ?? "/tmp"}/svc-test-shared/wink-sg-100d-1.1.0.v1.bin`;

/** A free loopback TCP port (probe and release; the caller binds it right after). */
export function freePort(): number {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  return port;
}

/** One running service process. */
export interface Node {
  name: string;
  port: number;
  url: string;
  pid: number;
  child: Deno.ChildProcess;
  /** Its environment (a restart uses the same). */
  env: Record<string, string>;
  /** What it printed on stdout so far (the demo key on a first start). */
  out(): string;
  /** Sends a signal by PID (SIGKILL for the fault run) and waits for the exit; no-op once gone. */
  kill(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/** Options of {@link startNode}. */
export interface NodeOptions {
  name: string;
  dataDir: string;
  port?: number;
  /** Added to the defaults (LOG_LEVEL warn, shared word vectors, DEMO_SEED false). */
  env?: Record<string, string>;
  /** Where stderr goes: inherited (the console) or dropped. */
  stderr?: "inherit" | "null";
}

/** Every process this module started and has not seen exit: the exit hooks kill these by PID. */
export const running = new Map<number, Node>();

/** Spawns `main.ts serve`; resolves once the process is listening (it answers 503 while starting). */
export function spawnNode(opts: NodeOptions): Node {
  const port = opts.port ?? freePort();
  const env: Record<string, string> = {
    DATA_DIR: opts.dataDir,
    PORT: String(port),
    EMBEDDINGS_CACHE_PATH: SHARED_VECTORS,
    LOG_LEVEL: "warn",
    DEMO_SEED: "false",
    ...opts.env,
  };
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts", "serve"],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: opts.stderr ?? "inherit",
  }).spawn();
  let out = "";
  // Drained for the whole life of the child, so it never blocks on a full pipe.
  (async () => {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      if (out.length < 64 * 1024) out += value;
    }
  })();
  const node: Node = {
    name: opts.name,
    port,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    child,
    env,
    out: () => out,
    kill: async (signal = "SIGTERM") => {
      if (running.has(child.pid)) {
        try {
          Deno.kill(child.pid, signal);
        } catch { /* already gone */ }
      }
      return await child.status;
    },
  };
  running.set(child.pid, node);
  child.status.then(() => running.delete(child.pid));
  return node;
}

/** Waits until `url/readyz` answers 200 (the 503 of a starting process counts as not yet). */
export async function waitReady(url: string, timeoutMs = 60_000, child?: Deno.ChildProcess): Promise<void> {
  let exited = false;
  child?.status.then(() => (exited = true));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${url}: the process exited while starting`);
    const ok = await fetch(`${url}/readyz`).then(async (r) => {
      await r.body?.cancel();
      return r.status === 200;
    }).catch(() => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url}: not ready after ${timeoutMs} ms`);
}

/** {@link spawnNode} and {@link waitReady}. */
export async function startNode(opts: NodeOptions): Promise<Node> {
  const node = spawnNode(opts);
  try {
    await waitReady(node.url, 90_000, node.child);
  } catch (err) {
    await node.kill("SIGKILL");
    throw err;
  }
  return node;
}

/** Kills every process still running by PID (SIGTERM, then SIGKILL after `graceMs`). */
export async function killAll(graceMs = 5_000): Promise<void> {
  const nodes = [...running.values()];
  for (const n of nodes) {
    try {
      Deno.kill(n.pid, "SIGTERM");
    } catch { /* gone */ }
  }
  const timer = setTimeout(() => {
    for (const n of nodes) {
      try {
        if (running.has(n.pid)) Deno.kill(n.pid, "SIGKILL");
      } catch { /* gone */ }
    }
  }, graceMs);
  await Promise.all(nodes.map((n) => n.child.status));
  clearTimeout(timer);
}

/** The demo's key and ids, read from `DATA_DIR/demo.env` (written by the seeding process). */
export async function readDemoEnv(dataDir: string): Promise<Record<string, string>> {
  const text = await Deno.readTextFile(`${dataDir}/demo.env`);
  const vars: Record<string, string> = {};
  for (const m of text.matchAll(/^export (\w+)=(\S+)/gm)) vars[m[1]!] = m[2]!;
  return vars;
}
