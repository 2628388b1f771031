/** Payproxy real-time answers end to end: demo corpus, real search engine, real extractive answer engine. */
import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { payproxyAnswerWorld } from "./_answer_world.ts";
import { signedInit } from "./_helpers.ts";

Deno.test("payproxy real-time answers match the bearer route: text as {message}, structured as the payload", async () => {
  await using world = await payproxyAnswerWorld();
  const { w, seeded, secret, models, text } = world;
  const structured = models.find((m) => m.output.kind === "structured")!;
  const body = JSON.stringify({ query: "What did the council decide about the city budget?" });

  const ask = async (id: string) => {
    const url = `/payproxy/aimodel/${id}`;
    const res = await w.app.request(
      url,
      await signedInit({ ...secret, clock: w.clock, url, body, agentId: "agent-9" }),
    );
    return { status: res.status, usage: res.headers.get("zc-usage"), json: await res.json() };
  };
  const askBearer = async (id: string) => {
    const res = await w.app.request(`/app/aimodel/${id}`, {
      method: "POST",
      headers: { ...bearer(seeded.apiKey!), "content-type": "application/json" },
      body,
    });
    return { status: res.status, json: await res.json() };
  };

  const viaPayproxy = await ask(text.id);
  const viaBearer = await askBearer(text.id);
  assert.equal(viaPayproxy.status, 200);
  assert.equal(viaBearer.status, 200);
  assert.equal(typeof viaPayproxy.json.message, "string");
  assert.equal(viaPayproxy.json.message, viaBearer.json.message);
  // The same citations; the tracking links differ (each records its own caller and request).
  const untracked = (j: { citations: { source_url: string }[] }) =>
    j.citations.map(({ source_url: _, ...rest }) => rest);
  assert.deepEqual(untracked(viaPayproxy.json), untracked(viaBearer.json));
  assert.ok(viaPayproxy.json.citations.length >= 1, "the demo corpus answers the README question");
  assert.ok(
    viaPayproxy.json.citations.every((c: { source_url: string }) => /^http:\/\/svc\.test\/r\//.test(c.source_url)),
  );
  // The payproxy click is recorded for the paying agent, not a tenant.
  const click = await w.app.request(viaPayproxy.json.citations[0].source_url.replace("http://svc.test", ""));
  assert.equal(click.status, 302);
  assert.deepEqual(JSON.parse(viaPayproxy.usage!), [
    { serviceSlug: text.toolName, meterSlug: "query", quantity: 1 },
  ]);

  const payload = await ask(structured.id);
  const enveloped = await askBearer(structured.id);
  assert.equal(payload.status, 200);
  assert.equal(payload.json.message, undefined, "no {message} envelope on payproxy");
  assert.deepEqual(Object.keys(payload.json).sort(), ["answer", "found", "sources"]);
  assert.deepEqual(payload.json, JSON.parse(enveloped.json.message));
  assert.equal(JSON.parse(payload.usage!)[0].serviceSlug, "demo-newsroom-briefing");
  const access = w.log.lines.filter((l) => l.msg === "request" && String(l.path).startsWith("/payproxy/"));
  assert.ok(access.length === 2 && access.every((l) => l.caller === "payproxy:agent-9" && l.tenant === null));
});
