/**
 * A page of 1,000 results with full text is about 21 MB of JSON. It was made by one `JSON.stringify`
 * and sent as one string to encode, which held the event loop 150 to 300 ms for one request of a
 * tenant's own key. Results are now stringified and encoded one by one in time slices and sent as
 * pieces; the bytes are the same.
 */
import assert from "node:assert/strict";
import { bearer } from "../_helpers.ts";
import { searchWorld } from "../search/_world.ts";

/** A search world of 200 articles of 20,000 characters each. */
async function longArticles() {
  const w = await searchWorld();
  const body = (i: number) =>
    Array.from({ length: 400 }, (_, s) => `Harbour item ${i} sentence ${s} of the long report.`).join(" ").slice(
      0,
      20_000,
    );
  await w.deps.search.ingest(
    w.dm,
    Array.from(
      { length: 200 },
      (_, i) => ({ url: `https://alpha.example/t/${i}`, title: `Harbour ${i}`, body: body(i) }),
    ),
  );
  return w;
}

/** The pieces of a response body and their text. */
async function piecesOf(res: Response) {
  const pieces: Uint8Array[] = [];
  for await (const piece of res.body!) pieces.push(piece);
  const text = new TextDecoder().decode(await new Blob(pieces as BlobPart[]).arrayBuffer());
  return { pieces, text, largest: Math.max(...pieces.map((p) => p.length)) };
}

Deno.test("POST /app/datamodel/{dm_id} (legacy) of 200 full texts: sent in pieces too, the bytes JSON.stringify makes", async () => {
  await using w = await longArticles();
  const res = await w.app.request(`/app/datamodel/${w.dm.id}`, {
    method: "POST",
    headers: { ...bearer(w.key), "content-type": "application/json" },
    body: JSON.stringify({
      query: "harbour report",
      num_results: 200,
      similarity_top_k: 200,
      contents: { text: true },
    }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  const { text, largest } = await piecesOf(res);
  assert.ok(text.length > 3_000_000, `${text.length} characters`);
  assert.equal(Number(res.headers.get("content-length")), new TextEncoder().encode(text).length);
  assert.ok(largest < 64 * 1024, `a piece of ${largest} bytes`);
  const json = JSON.parse(text);
  assert.deepEqual(Object.keys(json), ["results"]);
  assert.equal(json.results.length, 200);
  assert.equal(text, JSON.stringify(json));
});

Deno.test("POST /app/v2/search of 200 full texts: sent in pieces of at most one result, the bytes JSON.stringify makes", async () => {
  await using w = await longArticles();
  const res = await w.app.request(`/app/v2/search?data_model_id=${w.dm.id}`, {
    method: "POST",
    headers: { ...bearer(w.key), "content-type": "application/json" },
    body: JSON.stringify({
      query: "harbour report",
      num_results: 200,
      similarity_top_k: 200,
      contents: { text: true },
    }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  const pieces: Uint8Array[] = [];
  for await (const piece of res.body!) pieces.push(piece);
  const text = new TextDecoder().decode(await new Blob(pieces as BlobPart[]).arrayBuffer());
  assert.ok(text.length > 3_000_000, `${text.length} characters`);
  assert.equal(Number(res.headers.get("content-length")), new TextEncoder().encode(text).length);
  const largest = Math.max(...pieces.map((p) => p.length));
  assert.ok(largest < 64 * 1024, `a piece of ${largest} bytes`);
  const json = JSON.parse(text);
  assert.equal(json.response.results.length, 200);
  assert.equal(text, JSON.stringify(json));
});
