/**
 * `deno task cluster`: N processes of the service on one KV file and one events folder, behind
 * HAProxy (docs/operations.md, "A cluster on one machine").
 *
 *   deno task cluster [--nodes 3] [--port 8080] [--data-dir ./data-cluster] [--shards 0]
 *
 * - The first process seeds the demo on an empty DATA_DIR; the others start once it is ready.
 * - HAProxy health-checks `/readyz`, retries idempotent requests (and any request whose connection
 *   failed) on another process (`retry-on`, `option redispatch`) and sends `X-Forwarded-For`
 *   (the processes run with `TRUST_PROXY=1`).
 * - `--shards S` gives each process one search shard (`SEARCH_SHARD=k/S`, processes assigned in
 *   turn) and routes requests naming a data model by HAProxy's `crc32,mod(S)`; an AI model's data
 *   models are co-located on the shard of its first one (a map file, read at start).
 * - Every process started (the services and HAProxy) is killed by PID on exit and on Ctrl-C.
 * HAProxy comes from Debian (`apt-get install haproxy`), installed when missing.
 */
import { parseArgs } from "node:util";
import { retryBusyKv } from "../core/store/kv_busy_retry.ts";
import { createRepos } from "../core/store/repos.ts";
import { shardOf } from "../core/search/index/shard.ts";
import { freePort, killAll, type Node, readDemoEnv, running, spawnNode, startNode, waitReady } from "./_cluster.ts";

/** How the cluster is laid out. */
export interface ClusterOptions {
  nodes: number;
  /** Balancer port on 127.0.0.1 (0: a free one). */
  port: number;
  dataDir: string;
  /** Search shards (0: every process serves every data model). */
  shards: number;
  /** Added to every process's environment. */
  env?: Record<string, string>;
  /** stderr of the processes: the console, or dropped (the fault run kills them on purpose). */
  stderr?: "inherit" | "null";
}

/** A running cluster. */
export interface Cluster {
  url: string;
  /** HAProxy's statistics (CSV at `${statsUrl};csv`). */
  statsUrl: string;
  nodes: Node[];
  haproxy: Deno.ChildProcess;
  configPath: string;
  /** Starts process `i` again with its environment (after a kill). */
  restart(i: number): Promise<Node>;
  /** Stops HAProxy and every process by PID. */
  stop(): Promise<void>;
}

/** Installs HAProxy from Debian when it is not on the PATH (as root, or through sudo). */
export async function ensureHaproxy(): Promise<string> {
  const which = async () => {
    const out = await new Deno.Command("sh", { args: ["-c", "command -v haproxy"], stdout: "piped" }).output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
  };
  const found = await which();
  if (found) return found;
  console.error("haproxy not found: installing it from Debian");
  const root = Deno.uid() === 0;
  const run = (args: string[]) =>
    new Deno.Command(root ? args[0]! : "sudo", {
      args: root ? args.slice(1) : args,
      stdout: "inherit",
      stderr: "inherit",
    })
      .output();
  await run(["apt-get", "update"]);
  await run(["apt-get", "install", "-y", "haproxy"]);
  const installed = await which();
  if (!installed) throw new Error("could not install haproxy (apt-get install -y haproxy)");
  return installed;
}

/** Per backend: the process indexes in it. */
type Layout = Map<string, number[]>;

/**
 * The HAProxy configuration the cluster runs (printed in docs/operations.md). `shardMap` is the
 * file of `key backend` lines (co-located data models, AI models, widgets) when sharded.
 */
export function haproxyConfig(
  { port, statsPort, nodes, shards, layout, shardMap }: {
    port: number;
    statsPort: number;
    nodes: { name: string; port: number }[];
    shards: number;
    layout: Layout;
    shardMap?: string;
  },
): string {
  const servers = (ids: number[]) =>
    ids.map((i) => `  server ${nodes[i]!.name} 127.0.0.1:${nodes[i]!.port} check`).join("\n");
  const backend = (name: string, ids: number[]) =>
    [
      `backend ${name}`,
      "  balance roundrobin",
      "  option httpchk GET /readyz",
      "  http-check expect status 200",
      servers(ids),
      "",
    ].join("\n");
  const lines = [
    "global",
    "  maxconn 4096",
    "",
    "defaults",
    "  mode http",
    "  timeout connect 1s",
    "  timeout client 60s",
    "  timeout server 60s",
    "  timeout queue 5s",
    "  timeout http-request 10s",
    "  # Health: /readyz every 500 ms; two failures take a process out, two successes put it back.",
    "  default-server inter 500ms fall 2 rise 2",
    "  # The client address for rate limits and events (TRUST_PROXY=1 in every process).",
    "  option forwardfor",
    "  # Retries on another process: a refused or reset connection always (nothing reached the",
    "  # service), a lost response or the 503 of a starting process only for idempotent requests.",
    "  retries 3",
    "  option redispatch 1",
    "  retry-on conn-failure empty-response response-timeout 503",
    "",
    "frontend api",
    `  bind 127.0.0.1:${port}`,
    "  # Only the balancer asks for the retryable form of a shard miss.",
    "  http-request del-header x-shard-retry",
    "  http-request set-header x-shard-retry 1",
    "  # One id per request, set before the first attempt: a retry resends it, so the process that",
    "  # answers records the search's events under the same ids as the one that timed out (stored once).",
    "  unique-id-format %{+X}o\\ %ci:%cp_%fi:%fp_%Ts_%rt:%pid",
    "  http-request set-header x-request-id %[unique-id] unless { req.hdr(x-request-id) -m found }",
    "  # Not idempotent: never resent once the request reached a process (payments, ingest, events).",
    "  acl idempotent method GET HEAD OPTIONS",
    "  acl read_only_post path /app/v2/search",
    "  http-request disable-l7-retry if !idempotent !read_only_post",
  ];
  if (shards > 0) {
    lines.push(
      "  # Search shards: the data model named by the query or the /v1/data-models path.",
      "  http-request set-var(txn.dm) url_param(data_model_id)",
      "  http-request set-var(txn.dm) path,field(4,/) if { path_beg /v1/data-models/dm_ }",
      "  http-request set-var(txn.model) path,field(4,/) if { path_beg /app/aimodel/ } || { path_beg /widget/v1/ }",
      "  http-request set-var(txn.model) path,field(3,/) if { path_beg /aimodel/ }",
      ...(shardMap
        ? [
          `  use_backend %[var(txn.dm),map(${shardMap})] if { var(txn.dm),map(${shardMap}) -m found }`,
          `  use_backend %[var(txn.model),map(${shardMap})] if { var(txn.model),map(${shardMap}) -m found }`,
        ]
        : []),
      `  use_backend shard%[var(txn.dm),crc32,mod(${shards}),add(1)] if { var(txn.dm) -m found }`,
      "  # Also restore the 421 a client sees when every process of the shard missed.",
      "  http-response set-status 421 if { status 503 } { res.hdr(shard-miss) -m found }",
    );
  }
  lines.push("  default_backend all", "");
  lines.push(backend("all", nodes.map((_, i) => i)));
  for (const [name, ids] of layout) lines.push(backend(name, ids));
  lines.push(
    "listen stats",
    `  bind 127.0.0.1:${statsPort}`,
    "  stats enable",
    "  stats uri /stats",
    "",
  );
  return lines.join("\n");
}

/** Co-location: every AI model's data models go to the shard of its first one. */
async function coLocation(dataDir: string, shards: number) {
  const kv = retryBusyKv(await Deno.openKv(`${dataDir}/kv.sqlite3`));
  try {
    const repos = createRepos(kv);
    const extra = new Map<number, Set<string>>();
    const map: string[] = [];
    const homeOfModel = new Map<string, number>();
    for (const am of await repos.aiModels.listAll()) {
      const [first, ...rest] = am.groundingDataModelIds;
      if (!first) continue;
      const home = shardOf(first, shards);
      homeOfModel.set(am.id, home);
      map.push(`${am.id} shard${home}`);
      for (const dm of rest) {
        if (shardOf(dm, shards) === home) continue;
        if (!extra.has(home)) extra.set(home, new Set());
        extra.get(home)!.add(dm);
        map.push(`${dm} shard${home}`);
      }
    }
    for (const wd of await repos.widgets.listAll()) {
      const home = homeOfModel.get(wd.aiModelId);
      if (home) map.push(`${wd.id} shard${home}`);
    }
    return { extra, map };
  } finally {
    kv.close();
  }
}

/** Starts the cluster. */
export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  const haproxyBin = await ensureHaproxy();
  await Deno.mkdir(opts.dataDir, { recursive: true });
  const port = opts.port || freePort();
  const statsPort = freePort();
  const url = `http://127.0.0.1:${port}`;
  const base: Record<string, string> = {
    BASE_URL: url,
    TRUST_PROXY: "1",
    ...opts.env,
  };
  const names = Array.from({ length: opts.nodes }, (_, i) => `node${i + 1}`);
  const ports = names.map(() => freePort());
  const seeded = await Deno.stat(`${opts.dataDir}/kv.sqlite3`).then(() => true, () => false);
  // The first start seeds the demo alone (concurrent seeds would each create a demo tenant).
  const envs: Record<string, string>[] = names.map(() => ({ ...base }));
  let first: Node | null = null;
  if (!seeded) {
    first = await startNode({
      name: names[0]!,
      dataDir: opts.dataDir,
      port: ports[0],
      env: { ...envs[0]!, DEMO_SEED: "true" },
      stderr: opts.stderr,
    });
  }
  const layout: Layout = new Map();
  let shardMap: string | undefined;
  if (opts.shards > 0) {
    const { extra, map } = await coLocation(opts.dataDir, opts.shards);
    shardMap = `${opts.dataDir}/haproxy-shards.map`;
    await Deno.writeTextFile(shardMap, map.join("\n") + "\n");
    for (let i = 0; i < opts.nodes; i++) {
      const k = (i % opts.shards) + 1;
      envs[i]!.SEARCH_SHARD = [`${k}/${opts.shards}`, ...(extra.get(k) ?? [])].join(",");
      if (!layout.has(`shard${k}`)) layout.set(`shard${k}`, []);
      layout.get(`shard${k}`)!.push(i);
    }
    // The seeding process started unsharded: start it again with its shard.
    if (first) {
      await first.kill("SIGTERM");
      first = null;
    }
  }
  const nodes: Node[] = [];
  if (first) nodes.push(first);
  const rest = names.slice(nodes.length).map((name, j) => {
    const i = j + nodes.length;
    return spawnNode({ name, dataDir: opts.dataDir, port: ports[i], env: envs[i], stderr: opts.stderr });
  });
  await Promise.all(rest.map((n) => waitReady(n.url, 120_000, n.child)));
  nodes.push(...rest);

  const configPath = `${opts.dataDir}/haproxy.cfg`;
  await Deno.writeTextFile(
    configPath,
    haproxyConfig({ port, statsPort, nodes, shards: opts.shards, layout, shardMap }),
  );
  const haproxy = new Deno.Command(haproxyBin, {
    args: ["-f", configPath, "-db"],
    stdout: "null",
    stderr: opts.stderr ?? "inherit",
  }).spawn();
  await waitReady(url, 10_000, haproxy);

  const cluster: Cluster = {
    url,
    statsUrl: `http://127.0.0.1:${statsPort}/stats`,
    nodes,
    haproxy,
    configPath,
    async restart(i) {
      const old = nodes[i]!;
      await old.kill("SIGKILL");
      const node = spawnNode({
        name: old.name,
        dataDir: opts.dataDir,
        port: old.port,
        env: old.env,
        stderr: opts.stderr,
      });
      nodes[i] = node;
      return node;
    },
    async stop() {
      try {
        haproxy.kill("SIGTERM");
      } catch { /* gone */ }
      await haproxy.status;
      await killAll();
    },
  };
  return cluster;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nodes: { type: "string", default: "3" },
      port: { type: "string", default: "8080" },
      "data-dir": { type: "string", default: "./data-cluster" },
      shards: { type: "string", default: "0" },
    },
  });
  const nodes = Number(values.nodes);
  const shards = Number(values.shards);
  const port = Number(values.port);
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 32) throw new Error("--nodes must be 1 to 32");
  if (!Number.isInteger(shards) || shards < 0 || shards > nodes) throw new Error("--shards must be 0 to --nodes");
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error("--port must be a TCP port");
  const given = values["data-dir"]!;
  const dataDir = given.startsWith("/") ? given : `${Deno.cwd()}/${given.replace(/^\.\//, "")}`;
  let stopping = false;
  let cluster: Cluster | null = null;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log("\nstopping every process by PID");
    if (cluster) await cluster.stop();
    else await killAll();
    Deno.exit(code);
  };
  Deno.addSignalListener("SIGINT", () => void stop(0));
  Deno.addSignalListener("SIGTERM", () => void stop(0));
  try {
    cluster = await startCluster({ nodes, port, dataDir, shards });
  } catch (err) {
    console.error(`cluster failed to start: ${(err as Error).message}`);
    await stop(1);
  }
  const demo = await readDemoEnv(dataDir).catch(() => ({} as Record<string, string>));
  console.log(`balancer   ${cluster!.url}   (stats ${cluster!.statsUrl})`);
  for (const n of cluster!.nodes) {
    console.log(
      `${n.name.padEnd(10)} ${n.url}   pid ${n.pid}${
        n.env.SEARCH_SHARD ? `   SEARCH_SHARD=${n.env.SEARCH_SHARD}` : ""
      }`,
    );
  }
  console.log(`haproxy    pid ${cluster!.haproxy.pid}   config ${cluster!.configPath}`);
  if (demo.KEY) console.log(`demo       source ${dataDir}/demo.env  (BASE is the balancer)`);
  console.log("Ctrl-C stops them all.");
  // A process that dies is reported; HAProxy takes it out of rotation on its own.
  for (const n of cluster!.nodes) {
    n.child.status.then((s) => !stopping && console.error(`${n.name} (pid ${n.pid}) exited: ${s.code}`));
  }
  void running;
}
