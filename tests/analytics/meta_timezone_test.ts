import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { analyticsWorld, loadFixture } from "./_fixture.ts";

Deno.test("every analytics endpoint echoes the zone it answered in as meta.timezone", async () => {
  await using world = await analyticsWorld();
  await loadFixture(world);
  for (
    const path of [
      "ask-ai",
      "ask-ai/logs",
      "ask-ai/breakdown?dimension=date",
      "sponsored-conversations",
      "session-intelligence",
      "realtime",
      "articles",
      "agents",
    ]
  ) {
    for (const zone of [null, "Asia/Kathmandu"]) {
      const url = `/v1/analytics/${path}${zone ? `${path.includes("?") ? "&" : "?"}timezone=${zone}` : ""}`;
      const res = await world.w.app.request(url, { headers: bearer(world.key) });
      assert.equal(res.status, 200, url);
      const body = await res.json();
      assert.equal(body.meta?.timezone, zone ?? "UTC", url);
      assert.equal(body.meta?.generated_at, "2026-11-22T12:00:00.000Z", url);
    }
  }
});
