/**
 * Shared setup of the analytics benchmarks: KV records for the fixture ids the fixtures CLI writes
 * by default (tn_fixture, wd_fixture, am_fixture, cp_fixture) and an API key.
 */
import type { Deps } from "../composition.ts";

/** Creates the fixture tenant, AI model, widget and campaign when missing; returns a fresh API key. */
export async function ensureFixtureTenant(deps: Deps): Promise<string> {
  const now = new Date().toISOString();
  if (!(await deps.repos.tenants.get("tn_fixture"))) {
    await deps.repos.tenants.create({ id: "tn_fixture", name: "Fixture Publisher", createdAt: now });
    await deps.repos.aiModels.create({
      id: "am_fixture",
      tenantId: "tn_fixture",
      name: "Fixture agent",
      groundingDataModelIds: [],
      provider: { kind: "extractive" },
      output: { kind: "text" },
      private: false,
      marketplace: false,
      createdAt: now,
    });
    await deps.repos.widgets.create({
      id: "wd_fixture",
      tenantId: "tn_fixture",
      name: "Fixture widget",
      aiModelId: "am_fixture",
      allowedOrigins: ["https://dailyledger.example"],
      deploymentType: "embed",
      createdAt: now,
    });
    await deps.repos.campaigns.create({
      id: "cp_fixture",
      tenantId: "tn_fixture",
      name: "Fixture campaign",
      creativeIds: ["cr_1001", "cr_1002"],
      createdAt: now,
    });
  }
  return (await deps.apiKeys.create("tn_fixture", "bench")).key;
}
