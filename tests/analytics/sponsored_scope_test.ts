import assert from "node:assert/strict";
import { writeRowsAsParquet } from "../../analytics/parquet_writer.ts";
import { uuidv7 } from "../../analytics/uuid7.ts";
import { AppError } from "../../core/errors.ts";
import { generateDay } from "../../fixtures/events.ts";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture } from "./_fixture.ts";
import { httpStatus } from "../../routes/error_status.ts";

Deno.test("sponsored-conversations counts only the key tenant's events, even where another tenant's events name its campaign", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  await loadFixture(world);
  const get = async () => {
    const res = await w.app.request("/v1/analytics/sponsored-conversations", {
      headers: { ...bearer(world.key), "cache-control": "no-cache" },
    });
    assert.equal(res.status, 200);
    const { meta: _meta, ...body } = await res.json();
    return body;
  };
  const own = await get();
  assert.equal(own.summary.impressions, 1);

  // Another tenant's widget traffic naming this tenant's campaign: refused at ingestion...
  const otherWidget = (await w.deps.repos.widgets.get("wd_other"))!;
  await assert.rejects(
    () =>
      w.deps.events.ingest([{
        event_type: "sponsored_impression",
        session_id: "s_foreign",
        campaign_id: "cp_spring",
        ts: "2026-11-21T10:00:00Z",
      }], { source: "widget", widget: otherWidget }),
    (err) =>
      err instanceof AppError && httpStatus(err) === 422 && err.message === "events.0.campaign_id: campaign not found",
  );
  // ...and, where such events are stored (written before that check), never counted for it.
  const foreign = generateDay({
    scope: {
      tenantId: world.other.tenantId,
      widgets: [{ id: "wd_other", aiModelId: "am_other", deploymentType: "embed", origin: "https://other.example" }],
      campaigns: [{ id: "cp_spring", creativeIds: ["cr_1001"], prompts: [{ id: "pm_1", text: "Where to travel?" }] }],
    },
    date: "2026-11-21",
    events: 400,
    seed: 5,
  });
  assert.ok(foreign.some((e) => e.event_type === "sponsored_impression" && e.campaign_id === "cp_spring"));
  assert.ok(foreign.some((e) => e.event_type === "query" && e.campaign_id === "cp_spring"));
  await writeRowsAsParquet(w.deps.duckdb, w.deps.analytics.eventsDir, uuidv7(w.clock), foreign);
  w.deps.analytics.refresh();
  assert.deepEqual(await get(), own);
});
