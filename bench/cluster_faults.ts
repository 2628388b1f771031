/**
 * The fault run (docs/operations.md, "Faults survived"): a 3-process cluster behind HAProxy
 * (bench/cluster.ts) under a mixed load for 60 s, with `kill -9` of one process and its restart,
 * then `kill -9` of the event-flush lease holder and its restart; then the checks.
 *
 *   deno run -A bench/cluster_faults.ts [seconds=60]
 *
 * Load (all through the balancer): bearer searches, server events with an `event_id` each, signed
 * payproxy calls, paid-proxy calls against one credit plan, identity claims, article ingest. Checks:
 * - events: every acknowledged event is in Parquet exactly once (by event_id);
 * - money: remaining credit = bought - price x successful paid calls;
 * - rate limits: the analytics limit of one key over 3 processes is the limit, not 3x;
 * - freshness: an article ingested through the balancer is found on every process (each asked
 *   directly, the restarted ones included); p50/p99;
 * - background work: feed polls of one source are never closer than its interval (one poll per due
 *   time across the cluster); each closed day has one visit-figure file, written once;
 * - errors: 5xx by kind, with HAProxy's retries and redispatches from its statistics.
 * Traffic stays on 127.0.0.1; every process started is killed by PID at the end or on Ctrl-C.
 */
import { AnalyticsDb } from "../analytics/duckdb.ts";
import { systemClock, unixSeconds } from "../core/clock.ts";
import { signRequest } from "../core/payproxy/signature.ts";
import { PayproxySecretStore } from "../core/payproxy/secrets.ts";
import { retryBusyKv } from "../core/store/kv_busy_retry.ts";
import { Challenge, Credential } from "mppx";
import { readDemoEnv } from "./_cluster.ts";
import { type Cluster, startCluster } from "./cluster.ts";

const SECONDS = Number(Deno.args[0] ?? 60);
const FEED_INTERVAL_S = 5;
const ANALYTICS_LIMIT = 40;
const PRICE_MICROS = 10_000;
const json = { "content-type": "application/json" };

const dataDir = await Deno.makeTempDir({ prefix: "svc-faults-" });
let cluster: Cluster | null = null;
let feed: Deno.HttpServer<Deno.NetAddr> | null = null;
const cleanup = async () => {
  await cluster?.stop();
  await feed?.shutdown();
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
};
Deno.addSignalListener("SIGINT", async () => {
  await cleanup();
  Deno.exit(130);
});

// A local feed: every GET is a poll (the first ones are the registration's check).
const feedHits: number[] = [];
feed = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
  feedHits.push(performance.now());
  const items = Array.from(
    { length: 3 },
    (_, i) =>
      `<item><title>Feed item ${i}</title><link>https://feed.example/items/${i}</link><description>Ferries sail again ${i}.</description></item>`,
  ).join("");
  return new Response(`<?xml version="1.0"?><rss version="2.0"><channel><title>F</title>${items}</channel></rss>`, {
    headers: { "content-type": "application/rss+xml" },
  });
});

const counts = new Map<string, number>();
const count = (kind: string, status: number | string) => {
  const k = `${kind} ${status}`;
  counts.set(k, (counts.get(k) ?? 0) + 1);
};
/** Visit-figure files (`date=.../visits-*.parquet`) and their modification times. */
async function listFigures(dir: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const days = await Array.fromAsync(Deno.readDir(dir)).catch(() => [] as Deno.DirEntry[]);
  for (const d of days) {
    if (!d.name.startsWith("date=")) continue;
    for await (const f of Deno.readDir(`${dir}/${d.name}`)) {
      if (f.name.endsWith(".parquet")) {
        out.set(`${d.name}/${f.name}`, (await Deno.stat(`${dir}/${d.name}/${f.name}`)).mtime!.getTime());
      }
    }
  }
  return out;
}
const q = (xs: number[], f: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(f * (xs.length - 1))]! : NaN;

try {
  const t0 = performance.now();
  cluster = await startCluster({
    nodes: 3,
    port: 0,
    dataDir,
    shards: 0,
    stderr: "null",
    env: {
      EVENTS_FLUSH_INTERVAL_S: "2",
      EVENTS_FLUSH_LEASE_S: "5",
      ANALYTICS_CACHE_TTL_S: "0",
      ANALYTICS_RATE_LIMIT_PER_MIN: String(ANALYTICS_LIMIT),
      ALLOW_PRIVATE_URLS: "true",
      SOURCE_MIN_INTERVAL_S: String(FEED_INTERVAL_S),
      SOURCE_LEASE_S: "10",
      POLLER_TICK_S: "1",
      MAIL_OUTBOX: "true",
      STOREFRONT_RATE_LIMIT: "1000000",
      SEARCH_RATE_LIMIT_PER_MIN: "10000000",
      EVENTS_PER_MIN_PER_ADDRESS: "1000000",
      CLAIM_MAIL_PER_ADDRESS: "1000000",
      CLAIM_MAIL_PER_SELLER: "1000000",
    },
  });
  const lb = cluster.url;
  console.log(`cluster up in ${((performance.now() - t0) / 1000).toFixed(1)} s at ${lb}`);
  const demo = await readDemoEnv(dataDir);
  const auth = { authorization: `Bearer ${demo.KEY}` };

  // An agent with 100.00 USD of credit, bought through the balancer.
  let res = await fetch(`${lb}/agent/identity`, { method: "POST", headers: json, body: '{"type":"anonymous"}' });
  const identity = (await res.json()).identity as { assertion: string; credential_id: string };
  res = await fetch(`${lb}/oauth2/token`, {
    method: "POST",
    body: new URLSearchParams({
      grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
      assertion: identity.assertion,
    }),
  });
  const token = (await res.json()).access_token as string;
  res = await fetch(`${lb}/manifest.json`);
  const plan = ((await res.json()).plans as { id: string; kind: string }[]).find((p) => p.kind === "credit")!;
  const buy = JSON.stringify({ amountUsd: "100.000000" });
  res = await fetch(`${lb}/plans/${plan.id}/purchase`, {
    method: "POST",
    headers: { ...json, authorization: `Bearer ${token}` },
    body: buy,
  });
  const card = Challenge.fromResponseList(res).find((c) => c.method === "card")!;
  await res.body?.cancel();
  res = await fetch(`${lb}/plans/${plan.id}/purchase`, {
    method: "POST",
    headers: {
      ...json,
      authorization: Credential.serialize(Credential.from({ challenge: card, payload: { token: "spt_test_success" } })),
      "zc-agent-authorization": `Bearer ${token}`,
    },
    body: buy,
  });
  if (res.status !== 200) throw new Error(`purchase failed: ${res.status}`);
  await res.body?.cancel();
  const bought = 100_000_000;

  // The seller's payproxy secret, read from the shared KV as an upstream caller would hold it.
  const kv = retryBusyKv(await Deno.openKv(`${dataDir}/kv.sqlite3`));
  const secret = (await new PayproxySecretStore(kv, systemClock).current("demo"))!;
  kv.close();

  // The feed source, polled every FEED_INTERVAL_S by whichever process takes its lease.
  res = await fetch(`${lb}/v1/data-models/${demo.DM}/sources`, {
    method: "POST",
    headers: { ...auth, ...json },
    body: JSON.stringify({
      type: "rss",
      url: `http://127.0.0.1:${feed!.addr.port}/feed.xml`,
      interval_s: FEED_INTERVAL_S,
    }),
  });
  if (res.status !== 201) throw new Error(`source not registered: ${res.status} ${await res.text()}`);
  await res.body?.cancel();
  const pollsFrom = feedHits.length;

  const figuresAtStart = await listFigures(`${dataDir}/derived/visits`);
  const started = performance.now();
  const until = started + SECONDS * 1000;
  const ackedEvents: string[] = [];
  const unackedEvents: string[] = [];
  let paidOk = 0;
  const freshness: { node: string; ms: number; restarted: boolean }[] = [];
  const notFresh: string[] = [];
  /** Per article: when the last live process found it. */
  const slowest: number[] = [];
  const restarted = new Set<string>();

  const loop = async (kind: string, pauseMs: number, fn: () => Promise<number>) => {
    while (performance.now() < until) {
      const status = await fn().catch(() => "network");
      count(kind, status);
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  };
  const call = async (url: string, init: RequestInit) => {
    const r = await fetch(url, init);
    await r.arrayBuffer();
    return r.status;
  };
  const queries = ["interest rates", "coastal storm flooding", "port strike", "cup final", "heatwave"];
  let n = 0;
  const search = () =>
    call(`${lb}/app/v2/search?data_model_id=${demo.DM}`, {
      method: "POST",
      headers: { ...auth, ...json },
      body: JSON.stringify({ query: queries[n++ % queries.length] }),
    });
  const events = async () => {
    const batch = Array.from({ length: 5 }, () => ({
      event_id: `fault-${crypto.randomUUID()}`,
      event_type: "query",
      interaction_type: "free_form",
      widget_id: demo.WD,
      session_id: "fault-run",
      prompt: "fault run",
    }));
    const ids = batch.map((e) => e.event_id);
    try {
      const status = await call(`${lb}/v1/events`, {
        method: "POST",
        headers: { ...auth, ...json },
        body: JSON.stringify({ widget_id: demo.WD, events: batch }),
      });
      (status < 300 ? ackedEvents : unackedEvents).push(...ids);
      return status;
    } catch (err) {
      unackedEvents.push(...ids);
      throw err;
    }
  };
  const paid = async () => {
    const status = await call(`${lb}/v2/search?data_model_id=${demo.DM}`, {
      method: "POST",
      headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: "harbour storm" }),
    });
    if (status === 200) paidOk++;
    return status;
  };
  const payproxy = () => {
    const path = `/payproxy/v2/search?data_model_id=${demo.DM}`;
    const body = JSON.stringify({ query: "port strike" });
    const requestId = `fault-${crypto.randomUUID()}`;
    const s = signRequest({
      ...secret,
      t: unixSeconds(systemClock),
      method: "POST",
      url: path,
      body,
      requestId,
      agentId: identity.credential_id,
    });
    return call(`${lb}${path}`, { method: "POST", headers: { ...json, ...s.headers }, body });
  };
  const claim = async () => {
    const r = await fetch(`${lb}/agent/identity`, { method: "POST", headers: json, body: '{"type":"anonymous"}' });
    const created = await r.json().catch(() => null) as { claim?: { token: string } } | null;
    if (r.status !== 201 || !created?.claim) return r.status;
    return await call(`${lb}/agent/identity/claim`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({
        type: "service_auth",
        claim_token: created.claim.token,
        login_hint: `reader-${crypto.randomUUID().slice(0, 8)}@example.com`,
      }),
    });
  };
  const ingest = async () => {
    const marker = `fresh${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
    const status = await call(`${lb}/v1/data-models/${demo.DM}/articles`, {
      method: "POST",
      headers: { ...auth, ...json },
      body: JSON.stringify([{ url: `https://dailyledger.example/${marker}`, title: `Quay ${marker}`, body: marker }]),
    });
    if (status !== 200) return status;
    const written = performance.now();
    // Every live, ready process, asked directly, must find it; the slowest decides the article's freshness.
    const times = await Promise.all(cluster!.nodes.map(async (node) => {
      for (;;) {
        const elapsed = performance.now() - written;
        if (elapsed > 10_000) {
          notFresh.push(node.name);
          return null;
        }
        const r = await fetch(`${node.url}/app/v2/search?data_model_id=${demo.DM}`, {
          method: "POST",
          headers: { ...auth, ...json },
          body: JSON.stringify({ query: marker, similarity_top_k: 3 }),
        }).catch(() => null);
        // Killed, or starting (503): not asked; a started process has built its index from KV.
        if (!r) return null;
        const text = await r.text();
        if (r.status === 503) return null;
        // The title, not the marker alone: the response echoes the query.
        if (r.status === 200 && text.includes(`Quay ${marker}`)) {
          const ms = performance.now() - written;
          freshness.push({ node: node.name, ms, restarted: restarted.has(node.name) });
          return ms;
        }
        await new Promise((res) => setTimeout(res, 50));
      }
    }));
    const found = times.filter((t): t is number => t !== null);
    if (found.length) slowest.push(Math.max(...found));
    return status;
  };

  // Faults: kill -9 node2 at 25 %, restart at 40 %; kill -9 the flush-lease holder at 60 %, restart at 75 %.
  const faults = (async () => {
    const at = (f: number) =>
      new Promise((r) => setTimeout(r, Math.max(0, started + f * SECONDS * 1000 - performance.now())));
    const log: string[] = [];
    await at(0.25);
    const victim = 1;
    log.push(
      `${((performance.now() - started) / 1000).toFixed(1)} s kill -9 ${cluster!.nodes[victim]!.name} (pid ${
        cluster!.nodes[victim]!.pid
      })`,
    );
    await cluster!.nodes[victim]!.kill("SIGKILL");
    await at(0.40);
    const back = await cluster!.restart(victim);
    restarted.add(back.name);
    log.push(`${((performance.now() - started) / 1000).toFixed(1)} s restart ${back.name} (pid ${back.pid})`);
    await at(0.60);
    const kv2 = retryBusyKv(await Deno.openKv(`${dataDir}/kv.sqlite3`));
    const lease = (await kv2.get<{ owner: string }>(["ev_flush_lease"])).value;
    kv2.close();
    const holderPid = Number(lease?.owner.split(":")[0]);
    const holder = cluster!.nodes.findIndex((x) => x.pid === holderPid);
    if (holder < 0) {
      log.push(`flush lease holder pid ${holderPid} is not one of ours`);
      return log;
    }
    log.push(
      `${((performance.now() - started) / 1000).toFixed(1)} s kill -9 flush-lease holder ${
        cluster!.nodes[holder]!.name
      } (pid ${holderPid})`,
    );
    await cluster!.nodes[holder]!.kill("SIGKILL");
    await at(0.75);
    const back2 = await cluster!.restart(holder);
    restarted.add(back2.name);
    log.push(`${((performance.now() - started) / 1000).toFixed(1)} s restart ${back2.name} (pid ${back2.pid})`);
    return log;
  })();

  await Promise.all([
    loop("search", 20, search),
    loop("search", 20, search),
    loop("events", 50, events),
    loop("paid", 30, paid),
    loop("payproxy", 50, payproxy),
    loop("claim", 300, claim),
    loop("ingest", 500, ingest),
  ]);
  const faultLog = await faults;
  const loadSeconds = (performance.now() - started) / 1000;
  const polls = feedHits.slice(pollsFrom).filter((t) => t <= until);

  // Every process back up, then the log flushed (the lease passes within EVENTS_FLUSH_LEASE_S).
  for (const node of cluster.nodes) {
    for (let i = 0; i < 600; i++) {
      const ok = await fetch(`${node.url}/readyz`).then((r) => (r.body?.cancel(), r.status === 200)).catch(() => false);
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let unflushed = -1;
  for (let i = 0; i < 60; i++) {
    res = await fetch(`${lb}/v1/analytics/realtime`, { headers: auth });
    if (res.status === 200) {
      unflushed = (await res.json()).unflushed_events;
      if (unflushed === 0) break;
    } else await res.body?.cancel();
    await new Promise((r) => setTimeout(r, 1000));
  }

  // Events: each acknowledged id exactly once in Parquet.
  const db = await AnalyticsDb.open();
  const stored = new Map<string, number>();
  await db.withConnection(async (conn) => {
    const reader = await conn.runAndReadAll(
      `SELECT event_id, count(*)::INTEGER AS n FROM read_parquet('${dataDir}/events/*/*.parquet') WHERE event_id LIKE 'fault-%' GROUP BY 1`,
    );
    for (const row of reader.getRowObjects()) stored.set(String(row.event_id), Number(row.n));
  });
  await db.close();
  const lost = ackedEvents.filter((id) => !stored.has(id)).length;
  const duplicated = [...stored.values()].filter((c) => c > 1).length;
  const unackedStored = unackedEvents.filter((id) => stored.has(id)).length;

  // Money.
  res = await fetch(`${lb}/agent/entitlements`, { headers: { authorization: `Bearer ${token}` } });
  const ent = (await res.json()).entitlements as { planId?: string; id?: string; remainingUsd: string }[];
  // A used-up plan is no longer listed: nothing remains.
  const remaining = Math.round(Number(ent.find((e) => (e.planId ?? e.id) === plan.id)?.remainingUsd ?? 0) * 1e6);
  const expected = bought - paidOk * PRICE_MICROS;

  // Rate limits: 3 x limit requests of one key through the balancer, inside one minute window.
  const secondInMinute = new Date().getUTCSeconds();
  if (secondInMinute > 45) await new Promise((r) => setTimeout(r, (61 - secondInMinute) * 1000));
  const limited = await Promise.all(
    Array.from(
      { length: 3 * ANALYTICS_LIMIT },
      () =>
        fetch(`${lb}/v1/analytics/realtime`, { headers: auth }).then(async (r) => (await r.arrayBuffer(), r.status)),
    ),
  );
  const allowed = limited.filter((s) => s === 200).length;

  // Visit figures: one file per closed day; a file present when the load started is never written again.
  const figures = await listFigures(`${dataDir}/derived/visits`);
  const rewrittenDuringRun = [...figuresAtStart].filter(([path, mtime]) =>
    (figures.get(path) ?? mtime) !== mtime
  ).length;
  const perDay = new Map<string, number>();
  for (const path of figures.keys()) perDay.set(path.split("/")[0]!, (perDay.get(path.split("/")[0]!) ?? 0) + 1);

  // HAProxy: retries, redispatches, 5xx.
  const csv = await (await fetch(`${cluster.statsUrl};csv`)).text();
  const header = csv.split("\n")[0]!.replace(/^# /, "").split(",");
  const col = (row: string[], name: string) => Number(row[header.indexOf(name)] || 0);
  const backendRow = csv.split("\n").map((l) => l.split(",")).find((r) => r[0] === "all" && r[1] === "BACKEND")!;
  const frontendRow = csv.split("\n").map((l) => l.split(",")).find((r) => r[0] === "api" && r[1] === "FRONTEND")!;

  const gaps = polls.slice(1).map((t, i) => (t - polls[i]!) / 1000);
  const fresh = freshness.map((f) => f.ms);
  const freshRestarted = freshness.filter((f) => f.restarted).map((f) => f.ms);
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  const report = {
    seconds: Number(loadSeconds.toFixed(1)),
    faults: faultLog,
    requests: Object.fromEntries([...counts.entries()].sort()),
    events: {
      acknowledged: ackedEvents.length,
      in_parquet: stored.size,
      lost,
      duplicated,
      unacknowledged: unackedEvents.length,
      unacknowledged_but_stored: unackedStored,
      unflushed_at_check: unflushed,
    },
    money: { bought_micros: bought, paid_calls_ok: paidOk, remaining_micros: remaining, expected_micros: expected },
    rate_limit: { limit_per_min: ANALYTICS_LIMIT, sent: limited.length, allowed, processes: 3 },
    freshness_ms: {
      articles: slowest.length,
      all_processes_p50: Math.round(q(slowest, 0.5)),
      all_processes_p99: Math.round(q(slowest, 0.99)),
      all_processes_max: Math.round(q(slowest, 1)),
      over_3s: slowest.filter((x) => x > 3000).length,
      n: fresh.length,
      p50: Math.round(q(fresh, 0.5)),
      p99: Math.round(q(fresh, 0.99)),
      max: Math.round(q(fresh, 1)),
      restarted_n: freshRestarted.length,
      restarted_p50: Math.round(q(freshRestarted, 0.5)),
      restarted_p99: Math.round(q(freshRestarted, 0.99)),
      not_found_within_10s: notFresh.length,
    },
    feed_polls: {
      interval_s: FEED_INTERVAL_S,
      polls: polls.length,
      min_gap_s: Number(Math.min(...gaps).toFixed(2)),
      closer_than_half_interval: gaps.filter((g) => g < FEED_INTERVAL_S / 2).length,
    },
    visit_figures: {
      days: perDay.size,
      days_with_more_than_one_file: [...perDay.values()].filter((n) => n > 1).length,
      present_at_start: figuresAtStart.size,
      first_built_during_run: [...figures.keys()].filter((p) => !figuresAtStart.has(p)).length,
      rewritten_during_run: rewrittenDuringRun,
    },
    haproxy: {
      frontend_requests: col(frontendRow, "req_tot"),
      frontend_5xx: col(frontendRow, "hrsp_5xx"),
      retries: col(backendRow, "wretr"),
      redispatches: col(backendRow, "wredis"),
      backend_5xx: col(backendRow, "hrsp_5xx"),
    },
    load_average: load,
  };
  console.log(JSON.stringify(report, null, 2));
} finally {
  await cleanup();
}
