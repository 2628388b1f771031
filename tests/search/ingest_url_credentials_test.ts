import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { searchWorld } from "./_world.ts";

Deno.test("article ingest refuses an article or image URL with a user name, which reads as another site's", async () => {
  await using w = await searchWorld();
  const report = await (await w.app.request(`/v1/data-models/${w.dm.id}/articles`, {
    method: "POST",
    headers: { ...bearer(w.key), "content-type": "application/json" },
    body: JSON.stringify([
      { url: "https://alpha.example@beta.example/story", title: "Looks like Alpha" },
      { url: "https://user:pw@alpha.example/story", title: "A second copy of the story" },
      { url: "https://alpha.example/story", title: "The story", image: "https://alpha.example@beta.example/i.jpg" },
      { url: "https://alpha.example/story", title: "The story" },
    ]),
  })).json();
  assert.deepEqual(report.results.map((r: { status: string }) => r.status), ["error", "error", "error", "created"]);
  assert.equal(report.results[0].error, "url: must not carry a user name or password");
  assert.equal(report.results[0].url, undefined, "the refused URL is not echoed");
  assert.equal(report.results[1].error, "url: must not carry a user name or password");
  assert.equal(report.results[2].error, "image: must not carry a user name or password");
  assert.equal(await w.deps.search.count(w.dm.id), 1);
});
