import assert from "node:assert/strict";
import { AdminUsageError, runAdmin } from "../../cli/commands.ts";
import { seedCommerceDemo } from "../../fixtures/commerce_demo.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { seedPayproxySecret } from "../../fixtures/payproxy_demo.ts";
import { seedStorefront } from "../../fixtures/storefront.ts";
import { createTestWorld } from "../_helpers.ts";

Deno.test("seedCommerceDemo() makes the demo seller answer any host with plans, prices and a signing secret", async () => {
  await using w = await createTestWorld();
  await seedDemo(w.deps, [seedStorefront, seedPayproxySecret, seedCommerceDemo]);
  const res = await w.app.request("http://anything.test/services", { headers: { host: "anything.test" } });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.seller.id, "demo");
  assert.deepEqual(body.plans.map((p: { kind: string }) => p.kind).sort(), ["credit", "payg"]);
  assert.ok(await w.deps.commerce.secrets.current("demo"));
  // Running it again changes nothing.
  await seedCommerceDemo(w.deps, (await w.deps.kv.get<{ ids: never }>(["meta", "demo_seed"])).value!.ids);
  assert.equal((await w.deps.commerce.catalog.listPlans("demo")).length, 2);
});

Deno.test("admin: plan create / plan list / pricing set / payment refund", async () => {
  await using w = await createTestWorld();
  await seedDemo(w.deps, [seedStorefront, seedPayproxySecret, seedCommerceDemo]);
  const plan = await runAdmin(w.deps, [
    "plan",
    "create",
    "--seller",
    "demo",
    "--name",
    "Pro",
    "--credit",
    "--min",
    "1.00",
    "--max",
    "50.00",
  ]) as {
    id: string;
    minimumMicros: number;
  };
  assert.equal(plan.minimumMicros, 1_000_000);
  const plans = await runAdmin(w.deps, ["plan", "list", "--seller", "demo"]) as unknown[];
  assert.equal(plans.length, 3);
  const pricing = await runAdmin(w.deps, [
    "pricing",
    "set",
    "--seller",
    "demo",
    "--default",
    "0.05",
    "--service",
    "demo-news=0.03",
  ]);
  assert.deepEqual(pricing, { defaultQueryPriceMicros: 50_000, servicePrices: { "demo-news": 30_000 } });
  await assert.rejects(
    () => runAdmin(w.deps, ["plan", "create", "--seller", "nope", "--name", "x", "--credit"]),
    AdminUsageError,
  );
  await assert.rejects(
    () =>
      runAdmin(w.deps, [
        "plan",
        "create",
        "--seller",
        "demo",
        "--name",
        "x",
        "--credit",
        "--min",
        "1.001",
        "--max",
        "2",
      ]),
    AdminUsageError,
  );
  await assert.rejects(
    () => runAdmin(w.deps, ["payment", "refund", "--seller", "demo", "--reference", "nope"]),
    AdminUsageError,
  );
});
