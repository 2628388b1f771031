import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { searchWorld } from "./_world.ts";

type W = Awaited<ReturnType<typeof searchWorld>>;

const upsert = async (w: W, body: unknown) =>
  await (await w.app.request(`/v1/data-models/${w.dm.id}/articles`, {
    method: "POST",
    headers: { ...bearer(w.key), "content-type": "application/json" },
    body: JSON.stringify(body),
  })).json();

Deno.test("article ingest drops bidi overrides, zero-width and control characters from title, author, site and categories", async () => {
  await using w = await searchWorld();
  const report = await upsert(w, [{
    url: "https://alpha.example/bidi",
    // U+202E would show "Bank\u202Etxe.exe" as "Bankexe.txt"; U+200B hides inside a word; U+0007 is a bell.
    title: "Bank\u202Etxe.exe notice\u200B\u0007",
    author: "\u2066Jordan\u2069 O\u200Bkafor\u202D",
    site: "Alpha\uFEFF News\u0000",
    categories: ["Poli\u200Btics", "Politics", "\u202E", "Sp\u2067orts\u2069"],
    body: "The bank sent a notice.",
  }, { url: "https://alpha.example/blank", title: "\u202E\u200B" }]);
  assert.equal(report.created, 1);
  assert.equal(report.results[1].error, "title: must not be empty");
  const r = await w.app.request(
    `/v1/data-models/${w.dm.id}/article?url=${encodeURIComponent("https://alpha.example/bidi")}`,
    { headers: bearer(w.key) },
  );
  const a = await r.json();
  const got = JSON.stringify(a);
  assert.doesNotMatch(got, /[\u202A-\u202E\u2066-\u2069\u200B\u2060\uFEFF]|\\u000[07]/);
  assert.equal(a.title, "Banktxe.exe notice");
  assert.equal(a.author, "Jordan Okafor");
  assert.equal(a.site, "Alpha News");
  assert.deepEqual(a.categories, ["Politics", "Sports"]);
});
