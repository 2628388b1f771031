import { seedAnswerDemo } from "../../fixtures/answer_demo.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedDemoArticles } from "../../fixtures/demo_articles.ts";
import { seedPayproxySecret } from "../../fixtures/payproxy_demo.ts";
import { seedStorefront } from "../../fixtures/storefront.ts";
import { createTestWorld } from "../_helpers.ts";
import { startAllowancePeer } from "./_helpers.ts";

/**
 * A world seeded with the demo's storefront, articles and AI models, the demo seller's payproxy
 * secret rotated, its allowance answered by a local peer that allows every call: what the payproxy
 * answer tests share. `text` is the marketplace text model.
 */
export async function payproxyAnswerWorld() {
  const peer = startAllowancePeer("allow");
  try {
    const w = await createTestWorld({ env: { AGENT_AUTH_URL: peer.url } });
    const seeded = await seedDemo(w.deps, [seedStorefront, seedDemoArticles, seedAnswerDemo, seedPayproxySecret]);
    const secret = await w.deps.payproxy.secrets.rotate("demo");
    const models = await w.deps.repos.aiModels.listByTenant(seeded.ids.tenantId);
    const text = models.find((m) => m.output.kind === "text" && m.marketplace)!;
    return {
      w,
      seeded,
      secret,
      models,
      text,
      async [Symbol.asyncDispose]() {
        await w[Symbol.asyncDispose]();
        await peer[Symbol.asyncDispose]();
      },
    };
  } catch (err) {
    await peer[Symbol.asyncDispose]();
    throw err;
  }
}
