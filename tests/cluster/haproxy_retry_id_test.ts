/**
 * The cluster's HAProxy (bench/cluster.ts, docs/operations.md) resends a `POST /app/v2/search`
 * whose process did not answer in time to another process. Both attempts must carry one
 * `X-Request-Id`, set by the balancer before the first when the client sent none: the search's
 * analytics are recorded under ids derived from it and so stored once (tests/analytics/search_retry_test.ts).
 */
import assert from "node:assert/strict";
import { haproxyConfig } from "../../bench/cluster.ts";
import { freePort, waitReady } from "../../bench/_cluster.ts";

Deno.test({
  name:
    "HAProxy: a search retried after a response timeout reaches the next process with the first attempt's X-Request-Id",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const seen: { node: string; id: string | null }[] = [];
    let releaseSlow!: () => void;
    const slowReleased = new Promise<void>((r) => releaseSlow = r);
    // A process that takes the search and answers too late, and one that answers at once.
    const node = (name: string, slow: boolean) =>
      Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
        if (new URL(req.url).pathname === "/readyz") return new Response("ok");
        seen.push({ node: name, id: req.headers.get("x-request-id") });
        await req.body?.cancel();
        if (slow) await slowReleased;
        return Response.json({ from: name });
      });
    const slow = node("slow", true);
    const fast = node("fast", false);
    const dir = await Deno.makeTempDir({ prefix: "svc-haproxy-retry-" });
    let haproxy: Deno.ChildProcess | undefined;
    try {
      const port = freePort();
      const cfg = haproxyConfig({
        port,
        statsPort: freePort(),
        nodes: [{ name: "slow", port: slow.addr.port }, { name: "fast", port: fast.addr.port }],
        shards: 0,
        layout: new Map(),
      }).replace("timeout server 60s", "timeout server 300ms");
      await Deno.writeTextFile(`${dir}/haproxy.cfg`, cfg);
      haproxy = new Deno.Command("haproxy", {
        args: ["-f", `${dir}/haproxy.cfg`, "-db"],
        stdout: "null",
        stderr: "piped",
      })
        .spawn();
      const lb = `http://127.0.0.1:${port}`;
      await waitReady(lb, 10_000, haproxy);
      for (const clientId of [undefined, "client-chosen-id-1"]) {
        seen.length = 0;
        // Round robin: every other request meets the slow process first; two requests cover both orders.
        for (let i = 0; i < 2; i++) {
          const res = await fetch(`${lb}/app/v2/search?data_model_id=dm_any`, {
            method: "POST",
            headers: { "content-type": "application/json", ...(clientId ? { "x-request-id": clientId } : {}) },
            body: JSON.stringify({ query: "harbour" }),
          });
          assert.equal(res.status, 200);
          assert.deepEqual(await res.json(), { from: "fast" });
        }
        const retried = seen.filter((s, i) => s.node === "slow" && seen[i + 1]?.node === "fast");
        assert.ok(retried.length >= 1, JSON.stringify(seen));
        for (const s of retried) {
          const next = seen[seen.indexOf(s) + 1]!;
          assert.ok(s.id, "the balancer names the request before the first attempt");
          assert.equal(next.id, s.id, "the retry carries the first attempt's id");
          if (clientId) assert.equal(s.id, clientId, "a client's own id is kept");
        }
        const ids = seen.map((s) => s.id);
        assert.equal(new Set(ids).size, clientId ? 1 : 2, "one id per request");
      }
    } finally {
      releaseSlow();
      if (haproxy) {
        try {
          haproxy.kill("SIGTERM");
        } catch { /* exited */ }
        await haproxy.stderr.cancel();
        await haproxy.status;
      }
      await slow.shutdown();
      await fast.shutdown();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
