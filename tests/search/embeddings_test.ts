import assert from "node:assert/strict";
import { EmbeddingsError, OpenAiEmbeddings } from "../../core/search/embeddings/openai.ts";
import {
  convertWordVectors,
  decodeCache,
  loadWordVectors,
  LocalEmbeddings,
} from "../../core/search/embeddings/wink.ts";
import { engineOf } from "../_helpers.ts";
import { search, searchWorld } from "./_world.ts";

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

/** A package-shaped JSON with four words in 4 dimensions (index 4: l2 norm, index 5: rank). */
function tinyPackageJson(): string {
  const vectors: Record<string, number[]> = {
    the: [0.1, 0.1, 0.1, 0.1, 0.2, 0],
    storm: [1, 0.2, 0, 0, 1.02, 1],
    hurricane: [0.9, 0.3, 0, 0.1, 0.95, 3],
    'say "hi"': [0, 0, 1, 0, 1, 2],
    football: [0, 0, 0.1, 1, 1.005, 4],
  };
  return JSON.stringify({
    precision: 8,
    l2NormIndex: 4,
    wordIndex: 5,
    size: 5,
    dimensions: 4,
    words: Object.keys(vectors),
    vectors,
    unkVector: [0, 0, 0, 0, 0, -1],
  });
}

Deno.test("convertWordVectors() streams the package JSON into a compact cache that decodes the same", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/pkg.json`, tinyPackageJson());
    const n = await convertWordVectors(`${dir}/pkg.json`, `${dir}/cache/wv.bin`);
    assert.equal(n, 5);
    const bytes = await Deno.readFile(`${dir}/cache/wv.bin`);
    const wv = decodeCache(bytes);
    assert.equal(wv.dims, 4);
    // Rows are in frequency-rank order; escaped words survive.
    assert.deepEqual([...wv.index.keys()], ["the", "storm", 'say "hi"', "hurricane", "football"]);
    const row = wv.index.get("storm")!;
    const v = Array.from({ length: 4 }, (_, i) => wv.matrix[row * 4 + i]! * wv.scales[row]!);
    const norm = Math.hypot(1, 0.2);
    v.forEach((x, i) => assert.ok(Math.abs(x - [1, 0.2, 0, 0][i]! / norm) < 0.01));
    assert.ok(bytes.byteLength < 200);
    assert.throws(() => decodeCache(bytes.subarray(0, bytes.byteLength - 1)), /truncated/);
    assert.throws(() => decodeCache(new Uint8Array(40)), /not a word-vector cache/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("LocalEmbeddings converts once, then loads the cache without the JSON", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/pkg.json`, tinyPackageJson());
    const e = new LocalEmbeddings({ cachePath: `${dir}/wv.bin`, jsonPath: `${dir}/pkg.json` });
    const [storm, hurricane, football, unknown] = await e.embed(["Storm!", "hurricane", "football", "zzz qqq"]);
    assert.ok(dot(storm!, hurricane!) > 0.8);
    assert.ok(dot(storm!, football!) < dot(storm!, hurricane!));
    assert.ok(unknown!.every((x) => x === 0));
    await Deno.remove(`${dir}/pkg.json`);
    // A new path key: loads from the existing cache file, the JSON is gone.
    await Deno.copyFile(`${dir}/wv.bin`, `${dir}/wv2.bin`);
    const again = await loadWordVectors(`${dir}/wv2.bin`, `${dir}/pkg.json`);
    assert.equal(again.index.size, 5);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A local OpenAI-compatible embeddings server: 3-dim vectors from letter counts. */
function embeddingsPeer(opts: { failWith?: number; key?: string } = {}) {
  const calls: { auth: string | null; model: string; input: string[] }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    if (new URL(req.url).pathname !== "/v1/embeddings" || req.method !== "POST") {
      return new Response("not found", { status: 404 });
    }
    const body = await req.json();
    calls.push({ auth: req.headers.get("authorization"), model: body.model, input: body.input });
    if (opts.failWith) return new Response("{}", { status: opts.failWith });
    if (opts.key && req.headers.get("authorization") !== `Bearer ${opts.key}`) {
      return Response.json({ error: { message: "bad key" } }, { status: 401 });
    }
    const data = (body.input as string[]).map((t, index) => {
      const s = t.toLowerCase();
      const count = (re: RegExp) => (s.match(re) ?? []).length + 0.01;
      return {
        object: "embedding",
        index,
        embedding: [count(/storm|flood|rain/g), count(/goal|cup|match/g), count(/rate|bank/g)],
      };
    }).reverse(); // out of order on purpose: the client must use `index`
    return Response.json({ object: "list", data, model: body.model });
  });
  return { server, calls, baseUrl: `http://127.0.0.1:${server.addr.port}/v1` };
}

Deno.test("OpenAiEmbeddings posts batches to /v1/embeddings and returns normalised vectors in input order", async () => {
  const peer = embeddingsPeer({ key: "sk-test" });
  try {
    const client = new OpenAiEmbeddings({
      baseUrl: `${peer.baseUrl}/`,
      model: "embed-small",
      apiKey: "sk-test",
      batchSize: 2,
    });
    await client.init();
    assert.equal(client.dims, 3);
    assert.equal(client.id, "openai:embed-small");
    const vs = await client.embed(["storm and rain", "cup goal", "bank rate", ""]);
    assert.equal(vs.length, 4);
    assert.ok(vs[0]![0]! > 0.9 && vs[1]![1]! > 0.9 && vs[2]![2]! > 0.9);
    for (const v of vs) assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5);
    // probe + two batches of two; blank input sent as a space; bearer key sent.
    assert.equal(peer.calls.length, 3);
    assert.deepEqual(peer.calls[2]!.input, ["bank rate", " "]);
    assert.equal(peer.calls[1]!.auth, "Bearer sk-test");
    assert.equal(peer.calls[1]!.model, "embed-small");
  } finally {
    await peer.server.shutdown();
  }
});

Deno.test("OpenAiEmbeddings raises EmbeddingsError on a failing or unreachable server", async () => {
  const peer = embeddingsPeer({ failWith: 500 });
  try {
    const client = new OpenAiEmbeddings({ baseUrl: peer.baseUrl, model: "m" });
    await assert.rejects(client.embed(["x"]), (e) => e instanceof EmbeddingsError && /500/.test(e.message));
  } finally {
    await peer.server.shutdown();
  }
  const gone = new OpenAiEmbeddings({ baseUrl: peer.baseUrl, model: "m", timeoutMs: 2000 });
  await assert.rejects(gone.embed(["x"]), /unreachable/);
});

Deno.test("EMBEDDINGS_PROVIDER=openai makes the engine embed articles and queries through the server", async () => {
  const peer = embeddingsPeer();
  try {
    await using w = await searchWorld({
      env: { EMBEDDINGS_PROVIDER: "openai", EMBEDDINGS_BASE_URL: peer.baseUrl, EMBEDDINGS_MODEL: "e1" },
    });
    await w.deps.search.ingest(w.dm, [
      { url: "https://alpha.example/1", title: "Heavy rain and flood warnings" },
      { url: "https://beta.example/2", title: "Late goal wins the cup" },
    ]);
    const stored = await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://alpha.example/1");
    assert.equal(stored!.embedding!.model, "openai:e1");
    assert.equal(stored!.embedding!.dims, 3);
    // "storm" is in no title: only the vector side can find the flood article.
    const r = await search(w, { query: "storm", similarity_top_k: 1 });
    assert.equal(r.json.response.results[0].url, "https://alpha.example/1");
    assert.ok(peer.calls.some((c) => c.input.includes("storm")));
  } finally {
    await peer.server.shutdown();
  }
});

Deno.test("an index built with another embedding provider re-embeds the stored articles and saves them", async () => {
  const peer = embeddingsPeer();
  try {
    await using w = await searchWorld();
    await w.deps.search.ingest(w.dm, [{
      url: "https://alpha.example/f",
      title: "Flood warnings after heavy rain",
    }]);
    assert.equal(
      (await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://alpha.example/f"))!.embedding!.model,
      "wink-sg-100d@1.1.0+sif",
    );
    const { SearchEngine } = await import("../../core/search/engine.ts");
    const engine = new SearchEngine({
      kv: w.deps.kv,
      clock: w.clock,
      log: w.log,
      embeddings: new OpenAiEmbeddings({ baseUrl: peer.baseUrl, model: "e2" }),
    });
    await engine.start();
    const stored = await engineOf(w.deps).articles.getByUrl(w.dm.id, "https://alpha.example/f");
    assert.equal(stored!.embedding!.model, "openai:e2");
    assert.equal(stored!.embedding!.dims, 3);
    const out = await engine.recommend(w.dm, { query: "storm" }, {});
    assert.equal(out.response.results[0]!.url, "https://alpha.example/f");
  } finally {
    await peer.server.shutdown();
  }
});

Deno.test("start() with the embeddings server down logs, serves, and builds the index on first use", async () => {
  const peer = embeddingsPeer();
  const baseUrl = peer.baseUrl;
  await using w = await searchWorld();
  await w.deps.search.ingest(w.dm, [{ url: "https://alpha.example/x", title: "Harbour storm" }]);
  await peer.server.shutdown(); // the server is gone before start
  const { SearchEngine } = await import("../../core/search/engine.ts");
  const engine = new SearchEngine({
    kv: w.deps.kv,
    clock: w.clock,
    log: w.log,
    embeddings: new OpenAiEmbeddings({ baseUrl, model: "e3", timeoutMs: 2000 }),
  });
  await engine.start();
  assert.ok(w.log.lines.some((l) => l.msg === "search index build failed; retrying on first use"));
  await assert.rejects(engine.recommend(w.dm, { query: "storm" }, {}), /unreachable/);
});
