/**
 * The shard routing of `deno task cluster` with the real HAProxy (Debian's; `.ci/run` installs it):
 * a process that does not serve the requested data model answers the balancer 503, HAProxy resends
 * the request to another process of the backend, and a client gets 421 only when every one missed.
 */
import assert from "node:assert/strict";
import { haproxyConfig } from "../../bench/cluster.ts";
import { freePort, waitReady } from "../../bench/_cluster.ts";
import type { DataModel } from "../../core/store/models.ts";
import { bearer, createTestWorld } from "../_helpers.ts";

/** A test world served over HTTP on a loopback port, with one tenant, its key and data model `dm_routed1`. */
async function servedWorld(shard: string) {
  const w = await createTestWorld({ env: { SEARCH_SHARD: shard } });
  const tenant = await w.tenantWithKey();
  await w.deps.repos.dataModels.create(
    {
      id: "dm_routed1",
      tenantId: tenant.tenantId,
      name: "Routed",
      sites: [{ domain: "alpha.example", name: "Alpha" }],
      marketplace: false,
      createdAt: w.clock.now().toISOString(),
    } satisfies DataModel,
  );
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => w.app.fetch(req));
  return { w, server, port: server.addr.port, key: tenant.key };
}

Deno.test({
  name: "HAProxy: a shard miss is retried on another process of the backend; 421 when all miss",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const right = await servedWorld("dm_routed1");
    const wrong = await servedWorld("dm_elsewhere9");
    const dir = await Deno.makeTempDir({ prefix: "svc-haproxy-" });
    let haproxy: Deno.ChildProcess | undefined;
    try {
      const port = freePort();
      const nodes = [{ name: "wrong", port: wrong.port }, { name: "right", port: right.port }];
      // Backend "shard1" mixes a wrong process with the right one; "shard2" holds only the wrong one.
      const cfg = haproxyConfig({
        port,
        statsPort: freePort(),
        nodes,
        shards: 0,
        layout: new Map(),
      }).replace(
        "  default_backend all",
        [
          "  use_backend mixed if { url_param(data_model_id) -m str dm_routed1 } { path_beg /app/ }",
          "  use_backend onlywrong if { path_beg /v1/data-models/dm_routed1 }",
          "  http-response set-status 421 if { status 503 } { res.hdr(shard-miss) -m found }",
          "  default_backend all",
        ].join("\n"),
      ) + [
        "backend mixed",
        "  balance roundrobin",
        `  server wrong 127.0.0.1:${wrong.port}`,
        `  server right 127.0.0.1:${right.port}`,
        "",
        "backend onlywrong",
        `  server wrong 127.0.0.1:${wrong.port}`,
        "",
      ].join("\n");
      await Deno.writeTextFile(`${dir}/haproxy.cfg`, cfg);
      haproxy = new Deno.Command("haproxy", {
        args: ["-f", `${dir}/haproxy.cfg`, "-db"],
        stdout: "null",
        stderr: "piped",
      })
        .spawn();
      const lb = `http://127.0.0.1:${port}`;
      await waitReady(lb, 10_000, haproxy);

      // Round robin sends every other request to the wrong process first: all must still succeed.
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${lb}/app/v2/search?data_model_id=dm_routed1`, {
          method: "POST",
          headers: { ...bearer(right.key), "content-type": "application/json" },
          body: JSON.stringify({ query: "harbour" }),
        });
        assert.equal(res.status, 200, `request ${i}: ${await res.clone().text()}`);
        await res.body?.cancel();
      }
      // Only the wrong process: the client gets the 421 and its JSON body, not HAProxy's 503.
      const res = await fetch(`${lb}/v1/data-models/dm_routed1/articles`, {
        method: "POST",
        headers: { ...bearer(right.key), "content-type": "application/json" },
        body: JSON.stringify([{ url: "https://alpha.example/a", title: "Harbour" }]),
      });
      assert.equal(res.status, 421);
      assert.equal((await res.json()).error, "misdirected_request");
    } finally {
      if (haproxy) {
        try {
          haproxy.kill("SIGTERM");
        } catch { /* exited */ }
        await haproxy.stderr.cancel();
        await haproxy.status;
      }
      for (const s of [right, wrong]) {
        await s.server.shutdown();
        await s.w.close();
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
