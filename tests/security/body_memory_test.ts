/**
 * Round 6 left: `POST /v1/events` read up to 8 MiB a request before it knew the widget, the origin
 * or any key, and nothing bounded how many bodies were read at once: 60 concurrent 8 MiB batches
 * from one client took the server from 107 MB to a 1.1 GB peak. Bodies now take their bytes from a
 * process-wide budget before they are read (routes/middleware/body_budget.ts), and the event route
 * refuses a batch whose origin no widget allows, or whose sender is over its limit, unread.
 *
 * The service runs as `main.ts serve` in a child process on a real port; its peak resident set
 * (`VmHWM` in /proc) is read after each flood; the bounds are generous. Measured figures are in
 * docs/security.md.
 */
import assert from "node:assert/strict";
import { killAll, readDemoEnv, startNode } from "../../bench/_cluster.ts";

const MiB = 1024 * 1024;
const CONCURRENT = 60;

/** A field of /proc/{pid}/status in bytes (`VmRSS`, `VmHWM`). */
async function procBytes(pid: number, field: "VmRSS" | "VmHWM"): Promise<number> {
  // Deno reads another process's /proc files only with --allow-all, which the suite does not run
  // with (tools/test.ts); a `cat` of the file needs only --allow-run.
  const out = await new Deno.Command("cat", { args: [`/proc/${pid}/status`], stdout: "piped" }).output();
  const status = new TextDecoder().decode(out.stdout);
  const kb = status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  assert.ok(kb, `${field} in /proc/${pid}/status`);
  return Number(kb[1]) * 1024;
}

/** A widget batch of just under `bytes` bytes of JSON: many events (the costliest shape to decode). */
function batchOf(widgetId: string, bytes: number): Uint8Array {
  const event = JSON.stringify({ event_type: "query", session_id: "s".repeat(36), prompt: "p".repeat(120) });
  const count = Math.floor((bytes - 100) / (event.length + 1));
  return new TextEncoder().encode(`{"widget_id":"${widgetId}","events":[${Array(count).fill(event).join(",")}]}`);
}

/** Sends `CONCURRENT` copies of `body` at once; the statuses, in order. */
async function flood(
  url: string,
  body: Uint8Array,
  headers: Record<string, string>,
  count = CONCURRENT,
): Promise<number[]> {
  return await Promise.all(
    Array.from({ length: count }, async () => {
      const res = await fetch(`${url}/v1/events`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: body as BodyInit,
      });
      await res.body?.cancel();
      return res.status;
    }),
  );
}

const tally = (statuses: number[]) =>
  Object.entries(Object.groupBy(statuses, String)).map(([s, l]) => `${s}x${l!.length}`).join(" ");

Deno.test({
  name:
    "POST /v1/events: 60 concurrent 8 MiB batches from a foreign origin are refused unread; 20 from an allowed one are read within the budget",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-body-memory-" });
    try {
      const node = await startNode({
        name: "bodies",
        dataDir,
        stderr: "null",
        env: { DEMO_SEED: "true", SOURCES_POLLER: "false", EVENTS_FLUSHER: "false" },
      });
      const demo = await readDemoEnv(dataDir);
      const body = batchOf(demo.WD!, 8 * MiB - 1024);
      // One small batch first: the route's modules and the JSON worker are warm, as in a running server.
      const warm = await fetch(`${node.url}/v1/events`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: "https://dailyledger.example" },
        body: JSON.stringify({ widget_id: demo.WD, events: [{ event_type: "widget_load", session_id: "warm" }] }),
      });
      assert.equal(warm.status, 202, await warm.text());
      const idle = await procBytes(node.pid, "VmRSS");

      // An origin no widget allows (the flood round 6 measured): refused before the body is read.
      const foreign = await flood(node.url, body, { origin: "https://attacker.example" });
      const foreignPeak = await procBytes(node.pid, "VmHWM");
      console.log(`foreign origin: ${tally(foreign)}; idle ${idle / MiB | 0} MiB, peak ${foreignPeak / MiB | 0} MiB`);
      assert.ok(foreign.every((s) => s === 403), tally(foreign));
      assert.ok(foreignPeak - idle < 200 * MiB, `peak ${foreignPeak / MiB | 0} MiB over idle ${idle / MiB | 0} MiB`);

      // The demo widget's own origin (anyone can send it): every batch is read within the budget and
      // answered, none refused as busy (each is over 500 events: 422, then 429 once the address's
      // quota is spent).
      // A third of the flood: each allowed batch is decoded (about 0.3 s of CPU), and what the budget
      // bounds is how many at once, not how many in all.
      const allowed = await flood(node.url, body, { origin: "https://dailyledger.example" }, CONCURRENT / 3);
      const peak = await procBytes(node.pid, "VmHWM");
      console.log(`allowed origin: ${tally(allowed)}; peak ${peak / MiB | 0} MiB (+${(peak - idle) / MiB | 0} MiB)`);
      assert.ok(allowed.every((s) => s === 422 || s === 429), tally(allowed));
      assert.ok(peak - idle < 800 * MiB, `peak ${peak / MiB | 0} MiB over idle ${idle / MiB | 0} MiB`);
    } finally {
      await killAll();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
