/**
 * The composition root: parses config, opens Deno KV and DuckDB, builds the app, serves it and
 * shuts down cleanly on SIGINT/SIGTERM. Also runs admin subcommands against the same stores.
 *
 *   deno task start                 serve (seeds the demo on an empty DATA_DIR)
 *   deno task admin <command> ...   admin work, e.g. `tenant create --name Acme`
 */
import { AnalyticsDb } from "./analytics/duckdb.ts";
import { adminUsage, AdminUsageError, runAdmin } from "./cli/commands.ts";
import { systemClock } from "./core/clock.ts";
import { type Config, ConfigError, parseConfig } from "./core/config.ts";
import { buildDeps, type Deps } from "./composition.ts";
import { createLogger, describeError } from "./core/log.ts";
import { LineBuffer } from "./core/log_buffer.ts";
import { seedAnswerDemo } from "./fixtures/answer_demo.ts";
import { seedCommerceDemo } from "./fixtures/commerce_demo.ts";
import { seedDemo } from "./fixtures/demo.ts";
import { startDemoSite } from "./fixtures/demo_site.ts";
import { withDemoImages } from "./fixtures/demo_images.ts";
import { DEMO_ENV_FILE, writeDemoEnv } from "./fixtures/demo_env.ts";
import { seedStorefront } from "./fixtures/storefront.ts";
import { demoEventsStep } from "./fixtures/demo_events.ts";
import { seedDemoArticles } from "./fixtures/demo_articles.ts";
import { seedPayproxySecret } from "./fixtures/payproxy_demo.ts";
import { retryBusyKv } from "./core/store/mod.ts";
import { createApp } from "./routes/app.ts";
import { startServer } from "./routes/server.ts";

/** Opens the stores named by the config and wires the deps (logging to `log`, by default a new JSON logger). */
export async function openDeps(
  config: Config,
  log = createLogger({ level: config.logLevel, clock: () => systemClock.now() }),
): Promise<Deps> {
  const isUrl = /^https?:\/\//.test(config.kvPath);
  // Owner-only, like demo.env: the KV holds payproxy secrets and signing keys in clear. A folder
  // that exists already keeps the mode its operator gave it.
  if (config.kvPath !== ":memory:" && !isUrl) {
    await Deno.mkdir(config.kvPath.replace(/\/[^/]*$/, "") || ".", { recursive: true, mode: 0o700 });
  }
  await Deno.mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  // Several processes may share one KV file (docs/operations.md): writes that meet another's lock wait and retry.
  const kv = retryBusyKv(await Deno.openKv(config.kvPath));
  const duckdb = await AnalyticsDb.open({
    path: config.duckdbPath,
    threads: config.duckdbThreads,
    memoryLimit: config.duckdbMemoryLimit,
    allocatorFlush: config.duckdbAllocatorFlush,
    libPath: config.duckdbLibPath,
  });
  // The demo's publishers are on `.example` hosts, which no one serves: their images are drawn here.
  const deps = buildDeps({ config, kv, duckdb, clock: systemClock, log }, {
    ...(config.demoSeed ? { imageFetcher: withDemoImages } : {}),
  });
  await deps.start();
  return deps;
}

/** What every request gets while the service starts (stores, indexes, demo seed, event replay). */
function startingUp(): Response {
  return Response.json({ error: "starting", message: "The service is starting; retry shortly" }, {
    status: 503,
    headers: { "retry-after": "1" },
  });
}

/**
 * Serves until SIGINT/SIGTERM. The port is bound first: with `PORT=0` the system picks it, and the
 * base URLs (tracking links, discovery documents, `demo.env`) must name the port actually bound.
 * Until the app is ready every request is answered 503 with `Retry-After`.
 */
async function serve(parsed: Config, env: Record<string, string>): Promise<void> {
  let ready: ((req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => Response | Promise<Response>) | null = null;
  // One JSON line per request: written in batches, not one synchronous write each (core/log_buffer.ts).
  const logLines = new LineBuffer();
  const log = createLogger({
    level: parsed.logLevel,
    clock: () => systemClock.now(),
    // The system clock's time without making a Date a line (the access log writes one a request).
    nowMs: Date.now,
    write: logLines.write,
    lines: logLines,
  });
  const server = startServer((req, info) => ready ? ready(req, info) : startingUp(), {
    hostname: parsed.host,
    port: parsed.port,
    log,
    bodyReadDeadline: parsed.bodyReadDeadline,
  });
  let config: Config;
  let opening: Promise<Deps | null> = Promise.resolve(null);
  let demoSite: Deno.HttpServer | null = null;
  // One shutdown, however many signals arrive, heard from before start-up: a signal while the
  // service starts lets the step under way finish (Lifecycle.stop), then releases what the start
  // took (the event flusher's lease, timers) instead of leaving it to lapse. `server.finished`
  // resolves as soon as the server stops listening, so serve() also waits for the rest of the
  // shutdown (the final event flush) before main() exits the process.
  let stopping: Promise<void> | null = null;
  const stop = (signal: string) =>
    stopping ??= (async () => {
      log.info("shutting down", { signal });
      const ended = await server.shutdown(parsed.shutdownTimeoutS * 1000);
      await demoSite?.shutdown();
      const deps = await opening.catch(() => null);
      if (!deps) return;
      await deps.stop();
      if (ended.outcome === "timed_out" && ended.running > 0) {
        // Closing KV or DuckDB under a running handler fails it mid-write: leave them to the exit.
        deps.log.error("stopped with stores left open", { still_running: ended.running });
        return;
      }
      // DuckDB closes once the queries still under way (e.g. of a client that left) have finished.
      await deps[Symbol.asyncDispose]();
      deps.log.info("stopped", { requests: ended.outcome === "finished" ? "finished" : "finished after the timeout" });
    })();
  Deno.addSignalListener("SIGINT", () => void stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => void stop("SIGTERM"));
  let deps: Deps;
  try {
    config = parsed.port === 0 && env.BASE_URL === undefined
      ? parseConfig({ ...env, PORT: String(server.port) })
      : parsed;
    opening = openDeps(config, log);
    deps = (await opening)!;
    await startService(deps, config);
  } catch (err) {
    await server.shutdown(1_000);
    throw err;
  }
  if (!stopping) {
    ready = createApp(deps).fetch;
    deps.log.info("listening", { url: server.url, base_url: config.baseUrl });
    // The publisher demo site on its own origin: the seeded widget embedded as a publisher would.
    if (config.demoSeed && config.demoSiteUrl) {
      const { ids } = await seedDemo(deps);
      demoSite = startDemoSite(
        config.demoSiteUrl,
        { serviceUrl: config.baseUrl, widgetId: ids.widgetId },
        (message) => deps.log.warn("demo site", { message }),
      );
      if (demoSite) deps.log.info("demo site", { url: config.demoSiteUrl, widget: ids.widgetId });
    }
    deps.log.info("storefront", {
      agent_auth_url: config.agentAuthUrl,
      default_seller: config.storefront.defaultSellerId,
      mailer: deps.mailer.kind,
      ...(deps.mailer.kind === "outbox" ? { outbox: `${config.agentAuthUrl}/dev/outbox (operator key)` } : {}),
    });
  }
  await server.finished;
  if (stopping) await stopping;
  logLines.close();
}

/** Loads the indexes, seeds the demo if asked and starts the background work (a stop meanwhile ends it). */
async function startService(deps: Deps, config: Config): Promise<void> {
  await deps.start({
    indexes: true,
    background: true,
    beforeBackground: async () => {
      if (config.demoSeed) await seedDemoOnce(deps, config);
    },
  });
}

/** Seeds the demo on an empty store and shows its keys once. */
async function seedDemoOnce(deps: Deps, config: Config): Promise<void> {
  const seeded = await seedDemo(deps, [
    seedStorefront,
    seedDemoArticles,
    // After the articles: the events name them (impressions, clicks).
    demoEventsStep,
    seedAnswerDemo,
    seedPayproxySecret,
    seedCommerceDemo,
  ]);
  if (seeded.created) {
    const envPath = `${config.dataDir}/${DEMO_ENV_FILE}`;
    await writeDemoEnv(envPath, seeded, config.baseUrl);
    console.log(
      [
        "",
        "Demo data seeded. The API key is shown this once; keep it:",
        `  DEMO_API_KEY=${seeded.apiKey}`,
        `  OPERATOR_KEY=${seeded.operatorKey}    (opens /payproxy/metrics and, with MAIL_OUTBOX=true, /dev/outbox)`,
        `  tenant        ${seeded.ids.tenantId}`,
        `  data model    ${seeded.ids.dataModelId} (marketplace), ${seeded.ids.secondDataModelId}`,
        `  AI model      ${seeded.ids.aiModelId}`,
        `  widget        ${seeded.ids.widgetId}`,
        `  campaign      ${seeded.ids.campaignId}`,
        `The same as shell variables: source ${envPath}`,
        "",
      ].join("\n"),
    );
  } else {
    deps.log.info("demo data present", { ...seeded.ids });
  }
}

async function admin(config: Config, argv: string[]): Promise<void> {
  await using deps = await openDeps(config);
  const out = await runAdmin(deps, argv);
  console.log(typeof out === "string" ? out : JSON.stringify(out, null, 2));
}

/** Entry point: `serve` (default) or `admin <command>`. */
export async function main(args: string[]): Promise<number> {
  const [command = "serve", ...rest] = args;
  let config: Config;
  try {
    config = parseConfig(Deno.env.toObject());
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  try {
    if (command === "serve") await serve(config, Deno.env.toObject());
    else if (command === "admin") await admin(config, rest);
    else {
      console.error(`unknown command: ${command}\nUsage: main.ts [serve | admin <command>]\n\n${adminUsage()}`);
      return 2;
    }
    return 0;
  } catch (err) {
    if (err instanceof AdminUsageError) {
      console.error(err.message);
      return 2;
    }
    console.error(`fatal: ${describeError(err)}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
