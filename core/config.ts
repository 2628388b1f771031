import { z } from "zod";
import { LOG_LEVELS } from "./log.ts";

const bool = (name: string) =>
  z.enum(["true", "false", "1", "0", "yes", "no"], { error: `${name} must be true or false` })
    .transform((v) => v === "true" || v === "1" || v === "yes");

const int = (name: string, min: number, max: number) =>
  z.string().regex(/^\d+$/, { error: `${name} must be a whole number from ${min} to ${max}` })
    .transform(Number)
    .refine((n) => n >= min && n <= max, { error: `${name} must be a whole number from ${min} to ${max}` });

const url = (name: string) =>
  z.string().refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === "http:" || u.protocol === "https:";
    } catch {
      return false;
    }
  }, { error: `${name} must be an absolute http(s) URL` }).transform((v) => v.replace(/\/+$/, ""));

/**
 * Every environment variable the service reads, with its default. The README's configuration
 * table mirrors this object; keep them in step.
 */
const envSchema = z.object({
  PORT: int("PORT", 0, 65535).default(8000),
  HOST: z.string().regex(/^[A-Za-z0-9.:\[\]-]+$/, { error: "HOST must be a hostname or IP address" }).default(
    "127.0.0.1",
  ),
  DATA_DIR: z.string().min(1, { error: "DATA_DIR must not be empty" }).default("./data"),
  KV_PATH: z.string().min(1, { error: "KV_PATH must not be empty" }).optional(),
  DUCKDB_PATH: z.string().min(1, { error: "DUCKDB_PATH must not be empty" }).default(":memory:"),
  DUCKDB_THREADS: int("DUCKDB_THREADS", 1, 256).optional(),
  DUCKDB_MEMORY_LIMIT: z.string().regex(/^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i, {
    error: "DUCKDB_MEMORY_LIMIT must be a size such as 2GB or 512MiB",
  }).optional(),
  DUCKDB_LIB_PATH: z.string().min(1).optional(),
  BASE_URL: url("BASE_URL").optional(),
  AGENT_AUTH_URL: url("AGENT_AUTH_URL").optional(),
  NETWORK_API_URL: url("NETWORK_API_URL").optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS, { error: `LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}` }).default("info"),
  MAX_BODY_BYTES: int("MAX_BODY_BYTES", 1024, 256 * 1024 * 1024).default(1024 * 1024),
  DEMO_SEED: bool("DEMO_SEED").default(true),
  SHUTDOWN_TIMEOUT_S: int("SHUTDOWN_TIMEOUT_S", 0, 3600).default(10),
});

/** The parsed configuration the app is built from. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** A file path, `:memory:`, or a KV Connect URL. */
  kvPath: string;
  duckdbPath: string;
  duckdbThreads?: number;
  duckdbMemoryLimit?: string;
  /** `libduckdb.so` to preload (compiled binaries); default: beside the executable. */
  duckdbLibPath?: string;
  baseUrl: string;
  agentAuthUrl: string;
  networkApiUrl: string;
  logLevel: (typeof LOG_LEVELS)[number];
  maxBodyBytes: number;
  demoSeed: boolean;
  shutdownTimeoutS: number;
}

/** Raised when the environment does not parse; its message is one line naming the variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/**
 * Parses the environment into a {@link Config}.
 * Unknown variables are ignored; empty strings count as unset.
 * @throws {ConfigError} with a one-line message naming the first bad variable (never its value).
 */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const present: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== "") present[key] = v;
  }
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? "environment");
    const message = issue.message.startsWith(name) ? issue.message : `${name}: ${issue.message}`;
    throw new ConfigError(`Invalid configuration: ${message}`);
  }
  const e = parsed.data;
  const baseUrl = e.BASE_URL ?? `http://${e.HOST === "0.0.0.0" ? "127.0.0.1" : e.HOST}:${e.PORT}`;
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    kvPath: e.KV_PATH ?? `${e.DATA_DIR.replace(/\/+$/, "")}/kv.sqlite3`,
    duckdbPath: e.DUCKDB_PATH,
    duckdbThreads: e.DUCKDB_THREADS,
    duckdbMemoryLimit: e.DUCKDB_MEMORY_LIMIT,
    duckdbLibPath: e.DUCKDB_LIB_PATH,
    baseUrl,
    agentAuthUrl: e.AGENT_AUTH_URL ?? baseUrl,
    networkApiUrl: e.NETWORK_API_URL ?? `${baseUrl}/network`,
    logLevel: e.LOG_LEVEL,
    maxBodyBytes: e.MAX_BODY_BYTES,
    demoSeed: e.DEMO_SEED,
    shutdownTimeoutS: e.SHUTDOWN_TIMEOUT_S,
  };
}
