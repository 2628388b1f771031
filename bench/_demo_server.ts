/**
 * The real service as a child process for HTTP load scripts: `main.ts serve` on a free loopback
 * port with a fresh DATA_DIR and the demo seed, ready once it has printed the demo key and data
 * model and answers `/healthz`.
 */

/** Search bodies the load scripts rotate through: a semantic and a recency-with-`ref` query each. */
export const SEARCH_BODIES = [
  "interest rates",
  "coastal storm flooding",
  "port strike",
  "cup final",
  "heatwave",
  "budget airlines",
  "flu vaccine",
  "housing bill",
  "film festival",
  "coffee prices",
  "mars rover",
  "marathon record",
].flatMap((q) => [
  JSON.stringify({ query: q }),
  JSON.stringify({ query: q, search_algorithm: "most_recent", ref: "metrowire.example", num_articles_ref: 2 }),
]);

/** A started demo service. */
export interface DemoServer {
  base: string;
  /** The demo tenant's API key. */
  apiKey: string;
  /** The demo (marketplace) data model. */
  dataModelId: string;
  /** The environment it runs with (admin commands against the same DATA_DIR need it). */
  env: Record<string, string>;
  root: string;
  child: Deno.ChildProcess;
  /** SIGTERM, wait, remove the DATA_DIR. */
  stop(): Promise<void>;
}

/**
 * Starts the service. `env` adds to or overrides the defaults (`LOG_LEVEL` warn, the shared word
 * vector cache); `dataParent` is where the temporary DATA_DIR goes.
 */
export async function startDemoServer(
  { env = {}, prefix = "svc-load-", dataParent, root = new URL("..", import.meta.url).pathname }: {
    env?: Record<string, string>;
    prefix?: string;
    dataParent?: string;
    /** The checkout whose `main.ts` runs (another tree of the repo, to compare two versions). */
    root?: string;
  } = {},
): Promise<DemoServer> {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const dataDir = await Deno.makeTempDir({ prefix, dir: dataParent });
  const fullEnv = {
    DATA_DIR: dataDir,
    PORT: String(port),
    EMBEDDINGS_CACHE_PATH: Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin",
    LOG_LEVEL: Deno.env.get("LOG_LEVEL") ?? "warn",
    // Load runs send far more than one API key's minute allows.
    SEARCH_RATE_LIMIT_PER_MIN: "10000000",
    ...env,
  };
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts", "serve"],
    cwd: root,
    env: fullEnv,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    await child.status;
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  };
  try {
    // The first start prints the demo key and data model id.
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!/data model\s+dm_\w+/.test(out) || !/DEMO_API_KEY=\S+/.test(out)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`server exited early:\n${out}`);
      out += value;
    }
    (async () => {
      while (!(await reader.read()).done) { /* drain */ }
    })();
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 100; i++) {
      if (await fetch(`${base}/healthz`).then((r) => r.text().then(() => r.ok)).catch(() => false)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    return {
      base,
      apiKey: /DEMO_API_KEY=(\S+)/.exec(out)![1]!,
      dataModelId: /data model\s+(dm_\w+)/.exec(out)![1]!,
      env: fullEnv,
      root,
      child,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
