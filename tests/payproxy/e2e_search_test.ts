/** Payproxy search end to end through the real search engine (KV articles, BM25 + word vectors). */
import assert from "node:assert/strict";
import { newId } from "../../core/ids.ts";
import { FUSION_V1, FUSION_V2, retrievalFusion } from "../../core/search/rank/retrieval_mode.ts";
import type { DataModel } from "../../core/store/models.ts";
import { bearer, createTestWorld } from "../_helpers.ts";
import { signedInit, startAllowancePeer } from "./_helpers.ts";

async function world() {
  const peer = startAllowancePeer("allow");
  const w = await createTestWorld({ env: { AGENT_AUTH_URL: peer.url } });
  const { tenantId, key } = await w.tenantWithKey();
  const dm = await w.deps.repos.dataModels.create(
    {
      id: newId("dm", w.clock),
      tenantId,
      name: "Motor Desk",
      toolName: "motor-desk",
      sites: [{ domain: "alpha.example", name: "Alpha News" }, { domain: "beta.example", name: "Beta Times" }],
      marketplace: true,
      createdAt: w.clock.now().toISOString(),
    } satisfies DataModel,
  );
  const ago = (h: number) => new Date(w.clock.now().getTime() - h * 3_600_000).toISOString();
  const report = await w.deps.search.ingest(dm, [
    {
      url: "https://alpha.example/automobile-club",
      title: "Automobile club plans its annual dinner",
      body: "The automobile club met to plan the annual dinner, the menu and the seating for members.",
      pubdate: ago(30),
    },
    {
      url: "https://beta.example/car-sales",
      title: "New car and truck sales rise as dealers cut prices",
      body: "Dealers sold more cars, trucks and vans this spring after cutting prices on new vehicles.",
      pubdate: ago(20),
    },
    {
      url: "https://alpha.example/storm",
      title: "Coastal storm floods low-lying streets",
      body: "Emergency crews evacuated residents as the storm surge flooded the coast.",
      pubdate: ago(10),
    },
    {
      url: "https://beta.example/cup",
      title: "City club wins the cup final in extra time",
      body: "The striker scored the winning goal and fans celebrated the cup final.",
      pubdate: ago(5),
    },
    {
      url: "https://alpha.example/rates",
      title: "Central bank holds interest rates",
      body: "The central bank kept its benchmark rate unchanged as inflation cooled.",
      pubdate: ago(2),
    },
  ]);
  assert.equal(report.failed, 0);
  const secret = await w.deps.payproxy.secrets.create("seller-a");
  const payproxy = async (body: unknown, extra = "") => {
    const url = `/payproxy/v2/search?data_model_id=${dm.id}${extra}`;
    const res = await w.app.request(
      url,
      await signedInit({ ...secret, clock: w.clock, url, body: JSON.stringify(body), agentId: "agent-e2e" }),
    );
    return { status: res.status, usage: res.headers.get("zc-usage"), json: await res.json() };
  };
  const bearerSearch = async (body: unknown) => {
    const res = await w.app.request(`/app/v2/search?data_model_id=${dm.id}`, {
      method: "POST",
      headers: { ...bearer(key), "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  };
  return Object.assign(w, {
    peer,
    dm,
    payproxy,
    bearerSearch,
    async [Symbol.asyncDispose]() {
      await peer.close();
      await w.close();
    },
  });
}

// deno-lint-ignore no-explicit-any
const urls = (json: any): string[] => json.response.results.map((r: { url: string }) => r.url);
// Tracking links carry who asked (tenant or payproxy caller), so they differ by design.
// deno-lint-ignore no-explicit-any
const withoutTracking = (json: any) => json.response.results.map(({ source_url: _s, ...rest }: any) => rest);

Deno.test("payproxy search returns the bearer search's results, with zc-usage", async () => {
  await using w = await world();
  for (const body of [{ query: "car sales" }, { query: "storm", search_algorithm: "most_recent" }]) {
    const viaBearer = await w.bearerSearch(body);
    const viaPayproxy = await w.payproxy(body);
    assert.equal(viaBearer.status, 200);
    assert.equal(viaPayproxy.status, 200);
    assert.ok(urls(viaPayproxy.json).length > 0);
    assert.deepEqual(withoutTracking(viaPayproxy.json), withoutTracking(viaBearer.json));
    assert.deepEqual(JSON.parse(viaPayproxy.usage!), [{ serviceSlug: "motor-desk", meterSlug: "query", quantity: 1 }]);
  }
});

Deno.test("payproxy search_type keyword ranks by words only; semantic also finds articles sharing no word", async () => {
  await using w = await world();
  const keyword = await w.payproxy({ query: "automobile", search_type: "keyword", similarity_top_k: 5 });
  assert.equal(keyword.status, 200);
  assert.deepEqual(urls(keyword.json), ["https://alpha.example/automobile-club"]);
  const semantic = await w.payproxy({ query: "automobile", search_type: "semantic", similarity_top_k: 5 });
  assert.equal(semantic.status, 200);
  assert.ok(
    urls(semantic.json).includes("https://beta.example/car-sales"),
    `vectors relate automobile to cars: ${urls(semantic.json)}`,
  );
});

Deno.test("payproxy search_version 1 blends words and vectors differently from version 2", async () => {
  await using w = await world();
  const body = { query: "new car club", similarity_top_k: 5 };
  const v1 = await w.payproxy(body, "&search_version=1");
  const v2 = await w.payproxy(body, "&search_version=2");
  const none = await w.payproxy(body);
  // deno-lint-ignore no-explicit-any
  const scores = (j: any) => j.response.results.map((r: { url: string; score: number }) => `${r.url} ${r.score}`);
  assert.notDeepEqual(scores(v1.json), scores(v2.json));
  assert.deepEqual(scores(none.json), scores(v2.json), "version 2 is the default");
});

Deno.test("retrievalFusion(): keyword words only, semantic vectors only, hybrid by version (v-prefixed too), unknown values default", () => {
  assert.equal(retrievalFusion("keyword", "1").vectorWeight, 0);
  assert.equal(retrievalFusion("keyword").feedbackDocs, 0);
  assert.equal(retrievalFusion("semantic").vectorWeight, 1);
  assert.deepEqual(retrievalFusion("hybrid", "1"), FUSION_V1);
  assert.deepEqual(retrievalFusion("hybrid", "v1"), FUSION_V1);
  assert.deepEqual(retrievalFusion(undefined, "2"), FUSION_V2);
  assert.deepEqual(retrievalFusion(undefined, "v2"), FUSION_V2);
  assert.deepEqual(retrievalFusion("other", "99"), FUSION_V2);
  assert.equal(retrievalFusion(undefined, undefined, 0.3).vectorWeight, 0.3, "the configured weight");
});
