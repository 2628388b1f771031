/**
 * Drives a list of prepared HTTP requests through wrk (C, one thread), for load scripts that need
 * every request to differ (signed requests are single-use) and a client that leaves the CPU to the
 * server. The requests are written out as raw HTTP/1.1 and replayed in order by a small Lua
 * script; past the end it starts over, which a single-use route answers with 401 (counted as
 * failures, so a short list shows).
 */

/** A prepared request. `path` includes the query string. */
export interface RawRequest {
  /** POST unless set. */
  method?: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** What one wrk run measured. */
export interface WrkResult {
  /** 2xx and 3xx responses. */
  ok: number;
  failed: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU seconds wrk used (user + system). */
  cpuSeconds: number;
}

const LUA = `
local reqs, n, i = nil, 0, 0
function init(args) reqs = dofile(args[1]); n = #reqs end
function request() i = i + 1; if i > n then i = 1 end; return reqs[i] end
`;

/** Whether wrk is on the PATH. */
export async function wrkAvailable(): Promise<boolean> {
  try {
    return (await new Deno.Command("wrk", { args: ["--version"], stdout: "null", stderr: "null" }).output()).code <= 1;
  } catch {
    return false;
  }
}

/** Runs wrk against `origin` (`http://127.0.0.1:port`) for `seconds` with `connections` connections. */
export async function runWrk(
  origin: string,
  requests: RawRequest[],
  { seconds, connections, onStart }: {
    seconds: number;
    connections: number;
    /** Called when the requests are written and wrk is about to start (to start measuring). */
    onStart?: () => void;
  },
): Promise<WrkResult> {
  const dir = await Deno.makeTempDir({ prefix: "wrk-" });
  try {
    const host = new URL(origin).host;
    const lines = requests.map((r) => {
      const bytes = new TextEncoder().encode(r.body).length;
      const head = Object.entries(r.headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
      const raw = `${
        r.method ?? "POST"
      } ${r.path} HTTP/1.1\r\nHost: ${host}\r\n${head}Content-Length: ${bytes}\r\n\r\n${r.body}`;
      if (raw.includes("]==]")) throw new Error("request text would end the Lua string early");
      return `[==[${raw}]==]`;
    });
    await Deno.writeTextFile(`${dir}/requests.lua`, `return {\n${lines.join(",\n")}\n}\n`);
    await Deno.writeTextFile(`${dir}/script.lua`, LUA);
    // The shell's own /proc stat, read after wrk exits, holds wrk's CPU in cutime and cstime.
    const script = `wrk -t1 -c${connections} -d${seconds}s --latency -s "${dir}/script.lua" "${origin}" ` +
      `-- "${dir}/requests.lua"; code=$?; read -r stat < /proc/$$/stat; echo "SHELLSTAT $stat"; exit $code`;
    onStart?.();
    const out = await new Deno.Command("sh", { args: ["-c", script], stdout: "piped", stderr: "piped" }).output();
    const text = new TextDecoder().decode(out.stdout);
    if (!out.success) throw new Error(`wrk failed: ${text}${new TextDecoder().decode(out.stderr)}`);
    const [, count, span, unit] = /(\d+) requests in ([\d.]+)(ms|s|m)/.exec(text)!;
    const total = Number(count);
    const elapsed = Number(span) * (unit === "ms" ? 0.001 : unit === "m" ? 60 : 1);
    const failed = Number(/Non-2xx or 3xx responses: (\d+)/.exec(text)?.[1] ?? 0) +
      Number(
        /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text)?.slice(1)
          .reduce((a, b) => a + Number(b), 0) ?? 0,
      );
    const stat = /SHELLSTAT (.*)/.exec(text)![1]!;
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return {
      ok: total - failed,
      failed,
      seconds: elapsed,
      p50Ms: latencyMs(text, "50"),
      p99Ms: latencyMs(text, "99"),
      cpuSeconds: (Number(fields[13]) + Number(fields[14])) / 100,
    };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** A percentile line of wrk's `--latency` table, in ms. */
function latencyMs(text: string, pct: string): number {
  const m = new RegExp(`^\\s+${pct}%\\s+([\\d.]+)(us|ms|s)`, "m").exec(text);
  if (!m) return NaN;
  return Number(m[1]) * (m[2] === "us" ? 0.001 : m[2] === "s" ? 1000 : 1);
}
