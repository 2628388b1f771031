import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { hoursAgo, search, searchWorld } from "./_world.ts";

type W = Awaited<ReturnType<typeof searchWorld>>;

const upsert = async (w: W, body: unknown) =>
  await (await w.app.request(`/v1/data-models/${w.dm.id}/articles`, {
    method: "POST",
    headers: { ...bearer(w.key), "content-type": "application/json" },
    body: JSON.stringify(body),
  })).json();

Deno.test("article ingest refuses a pubdate more than a day ahead, so no article pins itself on top of most_recent", async () => {
  await using w = await searchWorld();
  const inAnHour = new Date(w.clock.now().getTime() + 3_600_000).toISOString();
  const report = await upsert(w, [
    { url: "https://alpha.example/pinned", title: "Storm pinned forever", pubdate: "2100-01-01T00:00:00Z" },
    { url: "https://alpha.example/pinned-unix", title: "Storm pinned by seconds", pubdate_unix: 4_102_444_800 },
    { url: "https://alpha.example/fresh", title: "Storm fresh report", pubdate: hoursAgo(w, 1) },
    // A clock a few hours off (time zones, scheduled posts) is still accepted.
    { url: "https://alpha.example/soon", title: "Storm scheduled report", pubdate: inAnHour },
  ]);
  assert.deepEqual(report.results.map((r: { status: string }) => r.status), ["error", "error", "created", "created"]);
  assert.equal(report.results[0].error, "pubdate: more than a day in the future");
  assert.equal(report.results[1].error, "pubdate: more than a day in the future");
  const r = await search(w, { query: "storm", algorithm: "most_recent" });
  assert.deepEqual(
    r.json.response.results.map((a: { url: string }) => a.url).sort(),
    ["https://alpha.example/fresh", "https://alpha.example/soon"],
  );
});
