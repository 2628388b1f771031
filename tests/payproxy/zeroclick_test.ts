/**
 * Dappier's payment-proxy paths `/zeroclick/v2/search` and `/zeroclick/aimodel/{id}`: the payproxy
 * orchestration under their own path, 401 body and caller identity.
 */
import assert from "node:assert/strict";
import { newId } from "../../core/ids.ts";
import type { DataModel } from "../../core/store/models.ts";
import { createTestWorld } from "../_helpers.ts";
import { signedInit, startAllowancePeer } from "./_helpers.ts";

async function world() {
  const peer = startAllowancePeer("allow");
  const w = await createTestWorld({ env: { AGENT_AUTH_URL: peer.url } });
  const { tenantId } = await w.tenantWithKey();
  const now = w.clock.now().toISOString();
  const dm = await w.deps.repos.dataModels.create(
    {
      id: newId("dm", w.clock),
      tenantId,
      name: "Pet Desk",
      toolName: "pet-desk",
      sites: [],
      marketplace: true,
      createdAt: now,
    } satisfies DataModel,
  );
  const privateDm = await w.deps.repos.dataModels.create({ ...dm, id: newId("dm", w.clock), marketplace: false });
  const am = await w.deps.repos.aiModels.create({
    id: newId("am", w.clock),
    tenantId,
    name: "Pet Answers",
    toolName: "pet-answers",
    groundingDataModelIds: [dm.id],
    provider: { kind: "extractive" },
    output: { kind: "text" },
    private: false,
    marketplace: true,
    createdAt: now,
  });
  const r = await w.deps.search.ingest(dm, [{
    url: "https://alpha.example/dogs",
    title: "Shelter dogs find homes at the weekend fair",
    body: "Volunteers matched forty shelter dogs with new families at the weekend adoption fair.",
    pubdate: new Date(w.clock.now().getTime() - 3_600_000).toISOString(),
  }]);
  assert.equal(r.failed, 0);
  const secret = await w.deps.payproxy.secrets.create("seller-z");
  const signed = (url: string, body: unknown, o: { agentId?: string; signedUrl?: string } = {}) =>
    signedInit({ ...secret, clock: w.clock, url: o.signedUrl ?? url, body: JSON.stringify(body), agentId: o.agentId });
  return Object.assign(w, {
    peer,
    dm,
    privateDm,
    am,
    signed,
    async [Symbol.asyncDispose]() {
      await peer.close();
      await w.close();
    },
  });
}

Deno.test("POST /zeroclick/v2/search runs the payproxy search: allowance, results, zc-usage, caller zeroclick:<agent>", async () => {
  await using w = await world();
  const url = `/zeroclick/v2/search?data_model_id=${w.dm.id}`;
  const res = await w.app.request(url, await w.signed(url, { query: "shelter dogs" }, { agentId: "agent-z" }));
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(res.headers.get("zc-usage")!), [{
    serviceSlug: "pet-desk",
    meterSlug: "query",
    quantity: 1,
  }]);
  const json = await res.json();
  assert.equal(json.response.results[0].title, "Shelter dogs find homes at the weekend fair");
  assert.equal(w.peer.calls.length, 1, "the allowance was asked");
  const line = w.log.lines.find((l) => l.path === "/zeroclick/v2/search" && l.status === 200);
  assert.equal(line?.caller, "zeroclick:agent-z");
});

Deno.test("POST /zeroclick/aimodel/{id} answers {message} with zc-usage", async () => {
  await using w = await world();
  const url = `/zeroclick/aimodel/${w.am.id}`;
  const res = await w.app.request(url, await w.signed(url, { query: "Where did the shelter dogs go?" }));
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(typeof (await res.json()).message, "string");
  assert.equal(JSON.parse(res.headers.get("zc-usage")!)[0].serviceSlug, "pet-answers");
});

Deno.test("zeroclick refusals: 401 invalid_zeroclick_signature (no, bad, replayed or payproxy-signed), 400, 402, 404, 422", async () => {
  await using w = await world();
  const url = `/zeroclick/v2/search?data_model_id=${w.dm.id}`;
  const expect401 = async (res: Response) => {
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), { error: "invalid_zeroclick_signature" });
  };
  await expect401(await w.app.request(url, { method: "POST", body: '{"query":"dogs"}' }));
  const tampered = await w.signed(url, { query: "dogs" });
  await expect401(await w.app.request(url, { ...tampered, body: '{"query":"cats"}' }));
  // The path is signed: a request signed for /payproxy does not verify on /zeroclick, and back.
  const payproxyUrl = `/payproxy/v2/search?data_model_id=${w.dm.id}`;
  await expect401(await w.app.request(url, await w.signed(url, { query: "dogs" }, { signedUrl: payproxyUrl })));
  const back = await w.app.request(payproxyUrl, await w.signed(payproxyUrl, { query: "dogs" }, { signedUrl: url }));
  assert.equal(back.status, 401);
  assert.deepEqual(await back.json(), { error: "invalid_payproxy_signature" });
  // Replay: the same signed request twice.
  const once = await w.signed(url, { query: "dogs" });
  const first = await w.app.request(url, once);
  assert.equal(first.status, 200);
  await first.body?.cancel();
  await expect401(await w.app.request(url, once));

  const missing = await w.app.request("/zeroclick/v2/search", await w.signed("/zeroclick/v2/search", { query: "x" }));
  assert.equal(missing.status, 400);
  assert.equal(await missing.text(), "Missing required query parameter: data_model_id");
  const empty = await w.app.request(url, await w.signed(url, { query: " " }));
  assert.equal(empty.status, 422);
  assert.deepEqual(await empty.json(), { message: "query cannot be empty", code: "empty_query" });
  const privUrl = `/zeroclick/v2/search?data_model_id=${w.privateDm.id}`;
  const hidden = await w.app.request(privUrl, await w.signed(privUrl, { query: "dogs" }));
  assert.equal(hidden.status, 404);
  assert.equal(await hidden.text(), "");
  w.peer.mode = "deny";
  const denied = await w.app.request(url, await w.signed(url, { query: "dogs" }, { agentId: "broke" }));
  assert.equal(denied.status, 402);
  assert.deepEqual(await denied.json(), {
    error: "payment_required",
    serviceSlug: "pet-desk",
    usage: [{ meterSlug: "query", quantity: 1 }],
  });
  const metrics = await w.app.request("/zeroclick/metrics");
  assert.equal(metrics.status, 404);
  await metrics.body?.cancel();
});
