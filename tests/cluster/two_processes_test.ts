/**
 * Two processes of the real service (`main.ts serve`) on one KV file and one events folder, with no
 * balancer: what one process writes, the other sees (docs/operations.md, "A cluster on one machine").
 */
import assert from "node:assert/strict";
import { Challenge, Credential } from "mppx";
import { freePort, killAll, type Node, readDemoEnv, startNode } from "../../bench/_cluster.ts";

const json = { "content-type": "application/json" };

/** The demo seller's card challenge answered with the sandbox's paying token. */
function paidWith(res: Response): string {
  const card = Challenge.fromResponseList(res).find((c) => c.method === "card");
  assert.ok(card, "a card challenge");
  return Credential.serialize(Credential.from({ challenge: card, payload: { token: "spt_test_success" } }));
}

async function remainingMicros(node: Node, token: string, planId: string): Promise<number> {
  const res = await fetch(`${node.url}/agent/entitlements`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  const body = await res.json() as { entitlements: { planId?: string; id?: string; remainingUsd: string }[] };
  const e = body.entitlements.find((x) => (x.planId ?? x.id) === planId);
  assert.ok(e, `an entitlement of ${planId}: ${JSON.stringify(body)}`);
  return Math.round(Number(e.remainingUsd) * 1e6);
}

Deno.test({
  name: "two processes on one KV file and events folder: articles, events and credit are shared exactly",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-cluster-" });
    // One public address for both, as behind a balancer: tokens name it as issuer and audience.
    const base = `http://127.0.0.1:${freePort()}`;
    const env = {
      BASE_URL: base,
      EVENTS_FLUSH_INTERVAL_S: "1",
      ANALYTICS_CACHE_TTL_S: "0",
      ANALYTICS_RATE_LIMIT_PER_MIN: "100000",
      SOURCES_POLLER: "false",
    };
    try {
      // The first seeds the demo; the second starts on the seeded store.
      const a = await startNode({ name: "a", dataDir, env: { ...env, DEMO_SEED: "true" } });
      const b = await startNode({ name: "b", dataDir, env });
      const demo = await readDemoEnv(dataDir);
      const auth = { authorization: `Bearer ${demo.KEY}` };

      // 1. An article written through A is found by a search on B within 3 s.
      const marker = `zyxquork${crypto.randomUUID().slice(0, 8)}`;
      const searchB = () =>
        fetch(`${b.url}/app/v2/search?data_model_id=${demo.DM}`, {
          method: "POST",
          headers: { ...auth, ...json },
          body: JSON.stringify({ query: marker, similarity_top_k: 3 }),
        });
      let res = await searchB();
      assert.equal(res.status, 200);
      assert.ok(!(await res.text()).includes(`Harbour ${marker} reopens`), "not there before it is written");
      res = await fetch(`${a.url}/v1/data-models/${demo.DM}/articles`, {
        method: "POST",
        headers: { ...auth, ...json },
        body: JSON.stringify([{
          url: `https://dailyledger.example/cluster/${marker}`,
          title: `Harbour ${marker} reopens`,
          body: `The harbour ${marker} reopened after the storm.`,
        }]),
      });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal((await res.json()).created, 1);
      const written = performance.now();
      let foundAfterMs = -1;
      while (performance.now() - written < 3_000) {
        res = await searchB();
        assert.equal(res.status, 200);
        const text = await res.text();
        // The title, not the marker alone: the response echoes the query.
        if (text.includes(`Harbour ${marker} reopens`)) {
          foundAfterMs = performance.now() - written;
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(foundAfterMs >= 0, "B finds the article A wrote within 3 s");

      // 2. Events sent to B are counted by A's analytics once flushed to Parquet (by whichever holds the lease).
      const realtime = async (node: Node) => {
        const r = await fetch(`${node.url}/v1/analytics/realtime?widget_id=${demo.WD}`, { headers: auth });
        assert.equal(r.status, 200);
        return await r.json() as { last_5_minutes: { queries: number }; unflushed_events: number };
      };
      const before = (await realtime(a)).last_5_minutes.queries;
      const sent = 7;
      const session = crypto.randomUUID();
      const events = Array.from({ length: sent }, (_, i) => ({
        event_id: `cluster-${session}-${i}`,
        event_type: "query",
        interaction_type: "free_form",
        widget_id: demo.WD,
        session_id: session,
        prompt: `cluster question ${i}`,
      }));
      res = await fetch(`${b.url}/v1/events`, {
        method: "POST",
        headers: { ...auth, ...json },
        body: JSON.stringify({ widget_id: demo.WD, events }),
      });
      assert.ok(res.status < 300, `events accepted: ${res.status} ${await res.clone().text()}`);
      await res.body?.cancel();
      // The same batch again (a client retry): stored once by event_id.
      res = await fetch(`${b.url}/v1/events`, {
        method: "POST",
        headers: { ...auth, ...json },
        body: JSON.stringify({ widget_id: demo.WD, events }),
      });
      await res.body?.cancel();
      let seen = await realtime(a);
      for (let i = 0; i < 100 && (seen.unflushed_events > 0 || seen.last_5_minutes.queries < before + sent); i++) {
        await new Promise((r) => setTimeout(r, 200));
        seen = await realtime(a);
      }
      assert.equal(seen.unflushed_events, 0, "the log is flushed to Parquet");
      assert.equal(seen.last_5_minutes.queries, before + sent, "A counts B's events once each");

      // 3. One credit plan bought through A, spent through A and B alternately: debits exact.
      res = await fetch(`${a.url}/agent/identity`, { method: "POST", headers: json, body: '{"type":"anonymous"}' });
      assert.equal(res.status, 201);
      const identity = (await res.json()).identity as { assertion: string };
      res = await fetch(`${b.url}/oauth2/token`, {
        method: "POST",
        body: new URLSearchParams({
          grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
          assertion: identity.assertion,
        }),
      });
      assert.equal(res.status, 200);
      const token = (await res.json()).access_token as string;
      res = await fetch(`${a.url}/manifest.json`);
      const plan = ((await res.json()).plans as { id: string; kind: string }[]).find((p) => p.kind === "credit")!;
      const purchase = { method: "POST", headers: { ...json, authorization: `Bearer ${token}` }, body: "" };
      purchase.body = JSON.stringify({ amountUsd: "1.000000" });
      res = await fetch(`${a.url}/plans/${plan.id}/purchase`, purchase);
      assert.equal(res.status, 402);
      const payment = paidWith(res);
      await res.body?.cancel();
      res = await fetch(`${b.url}/plans/${plan.id}/purchase`, {
        method: "POST",
        headers: { ...json, authorization: payment, "zc-agent-authorization": `Bearer ${token}` },
        body: purchase.body,
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      assert.equal(await remainingMicros(a, token, plan.id), 1_000_000);

      // 0.01 USD a search: 20 calls, 10 at once on each process.
      const call = (node: Node) =>
        fetch(`${node.url}/v2/search?data_model_id=${demo.DM}`, {
          method: "POST",
          headers: { ...json, authorization: `Bearer ${token}` },
          body: JSON.stringify({ query: "harbour storm" }),
        }).then(async (r) => {
          await r.body?.cancel();
          return r.status;
        });
      const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => call(i % 2 ? a : b)));
      const ok = statuses.filter((s) => s === 200).length;
      assert.equal(ok, 20, `every paid call succeeds: ${statuses.join(",")}`);
      assert.equal(await remainingMicros(a, token, plan.id), 1_000_000 - 20 * 10_000);
      assert.equal(await remainingMicros(b, token, plan.id), 1_000_000 - 20 * 10_000);
    } finally {
      await killAll();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
