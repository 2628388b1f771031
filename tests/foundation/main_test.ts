import assert from "node:assert/strict";
import { SHARED_EMBEDDINGS_CACHE } from "../_basics.ts";

const PERMS = ["--allow-net", "--allow-read", "--allow-write", "--allow-env", "--allow-ffi", "--allow-sys"];

/** A port the system has just given out; the child binds it before it opens any store. */
function freshPort(): number {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  return port;
}

/**
 * Starts `main.ts serve` with its own DATA_DIR on `port` (0: the server picks it itself); `listening`
 * resolves with what it printed up to the line saying it listens, and the address in that line.
 * The word vectors come from the suite's shared converted cache, not a new one.
 */
function startMain(dataDir: string, port: number) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...PERMS, "main.ts", "serve"],
    env: { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "info", EMBEDDINGS_CACHE_PATH: SHARED_EMBEDDINGS_CACHE },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const listening = (async () => {
    let out = "";
    const listeningLine = /^[^\n]*"msg":"listening"[^\n]*$/m;
    // Until the whole line is in: its address comes at the end.
    while (!/"msg":"listening"[^\n]*\n/.test(out)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`main.ts exited before listening:\n${out}`);
      out += value;
    }
    const line = JSON.parse(listeningLine.exec(out)![0]) as { url: string; base_url: string };
    return { out, url: line.url, baseUrl: line.base_url };
  })();
  // Once it listens, keep draining so the child never blocks on a full pipe.
  const rest = listening.then(async () => {
    while (!(await reader.read()).done);
  }, () => reader.cancel());
  return { child, listening, rest };
}

/**
 * One seeding start (the expensive part: the full demo seed) serves the start-up checks and the
 * seed checks; a second start on the same DATA_DIR checks the restart.
 */
Deno.test("main.ts serve: 503 while it starts, seeds an empty DATA_DIR once, stops cleanly, restarts on PORT=0", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-main-" });
  try {
    const port = freshPort();
    const first = startMain(dataDir, port);
    const stopFirst = async () => {
      first.child.kill("SIGTERM");
      await first.child.status;
    };
    let key: string | undefined;
    let env = "";
    try {
      await t.step("main.ts serve answers 503 with Retry-After while it starts, then serves", async () => {
        const statuses: number[] = [];
        let starting: Response | null = null;
        // Seeding the demo takes seconds, so the first answers come from the start-up handler.
        for (let i = 0; i < 2_400 && statuses.at(-1) !== 200; i++) {
          const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null);
          if (!res) {
            await new Promise((r) => setTimeout(r, 25));
            continue;
          }
          statuses.push(res.status);
          if (res.status === 503 && !starting) starting = res;
          else await res.body?.cancel();
          if (res.status !== 200) await new Promise((r) => setTimeout(r, 25));
        }
        assert.equal(statuses[0], 503, JSON.stringify(statuses));
        assert.equal(statuses.at(-1), 200);
        assert.equal(starting!.headers.get("retry-after"), "1");
        assert.equal((await starting!.json()).error, "starting");
      });

      await t.step("seeds on an empty DATA_DIR, prints the key once", async () => {
        const { out, url } = await first.listening;
        key = /DEMO_API_KEY=(ak_\S+)/.exec(out)?.[1];
        assert.ok(key, "the demo key is printed");
        assert.match(out, /data model\s+dm_/);
        // The same key and ids as shell variables for the README's curls, readable by the owner only.
        env = await Deno.readTextFile(`${dataDir}/demo.env`);
        assert.ok(env.includes(`export KEY=${key} `), "demo.env holds the printed key");
        assert.match(env, /^export DM=dm_\S+/m);
        assert.ok(env.includes(`export BASE=${url} `), env);
        assert.equal((await Deno.stat(`${dataDir}/demo.env`)).mode! & 0o777, 0o600);
        let res = await fetch(`${url}/healthz`);
        assert.equal(res.status, 200);
        await res.body?.cancel();
        res = await fetch(`${url}/v1/data-models`, { headers: { authorization: `Bearer ${key}` } });
        assert.equal(res.status, 200);
        assert.equal((await res.json()).data.length, 2);
        const operatorKey = /OPERATOR_KEY=(op_\S+)/.exec(out)?.[1];
        assert.ok(operatorKey, "the operator key is printed");
        res = await fetch(`${url}/payproxy/metrics`);
        assert.equal(res.status, 401, "metrics need the operator key");
        await res.body?.cancel();
        res = await fetch(`${url}/payproxy/metrics`, {
          headers: { authorization: `Bearer ${operatorKey}` },
        });
        assert.equal(res.status, 200);
        await res.body?.cancel();
        res = await fetch(`${url}/dev/outbox`);
        assert.equal(res.status, 404, "no outbox unless MAIL_OUTBOX=true");
        await res.body?.cancel();
      });

      await t.step("the demo's article images are served, drawn for its .example publishers", async () => {
        const { url } = await first.listening;
        const dm = /^export DM=(dm_\S+)/m.exec(env)![1];
        const res = await fetch(`${url}/app/v2/search?data_model_id=${dm}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ query: "port strike", similarity_top_k: 3 }),
        });
        assert.equal(res.status, 200);
        const results = (await res.json()).response.results as { image_url: string | null }[];
        assert.ok(results.length > 0 && results.every((r) => r.image_url), "every demo result has an image");
        const images = await Promise.all(results.map((r) => fetch(`${r.image_url}&w=128&h=72`)));
        const bodies = await Promise.all(images.map((img) => img.arrayBuffer()));
        images.forEach((img, i) => {
          assert.equal(img.status, 200, `image ${i}`);
          assert.match(img.headers.get("content-type") ?? "", /^image\/(webp|png|jpeg)$/);
          assert.ok(bodies[i]!.byteLength > 100);
        });
      });

      await t.step("stops cleanly on SIGTERM", async () => {
        first.child.kill("SIGTERM");
        assert.equal((await first.child.status).code, 0);
      });
    } finally {
      // A failed step leaves the child running: stop it before the temp folder goes.
      await stopFirst().catch(() => {});
      await first.rest;
      await first.child.stderr.cancel();
    }

    await t.step(
      "a restart on PORT=0 does not reseed, keeps the key, names the bound port, stops on SIGINT",
      async () => {
        assert.ok(key, "the first start printed a key");
        const second = startMain(dataDir, 0);
        try {
          const { out, url, baseUrl } = await second.listening;
          assert.doesNotMatch(out, /DEMO_API_KEY/, "restart does not reseed");
          assert.equal(await Deno.readTextFile(`${dataDir}/demo.env`), env, "restart leaves demo.env alone");
          // PORT=0: the base URL names the port the system gave, not :0.
          assert.equal(baseUrl, url);
          assert.doesNotMatch(url, /:0$/);
          const res = await fetch(`${url}/v1/data-models`, { headers: { authorization: `Bearer ${key}` } });
          assert.equal(res.status, 200, "the first key still works after restart");
          await res.body?.cancel();
          second.child.kill("SIGINT");
          assert.equal((await second.child.status).code, 0);
        } finally {
          try {
            second.child.kill("SIGTERM");
          } catch { /* already exited */ }
          await second.child.status;
          await second.rest;
          await second.child.stderr.cancel();
        }
      },
    );
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("main.ts exits 2 with a one-line message on bad configuration", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    // The test run has set up node_modules already. In `manual` mode deno takes no lock on it, so a
    // deno process starting at the same moment (files run in parallel) cannot add Deno's own
    // "Blocking waiting for file lock on node_modules directory" line to the stderr checked here.
    args: ["run", "--node-modules-dir=manual", ...PERMS, "main.ts", "serve"],
    env: { PORT: "not-a-port" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 2);
  assert.equal(
    new TextDecoder().decode(out.stderr).trim(),
    "Invalid configuration: PORT must be a whole number from 0 to 65535",
  );
});
