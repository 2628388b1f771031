/**
 * A request body that declares no length (chunked; HTTP/2 clients may omit Content-Length) took its
 * whole limit (1 MiB) as its share of the body budget up front, counted against its sender's address
 * on the public storefront routes: one address then had at most 8 such bodies in flight and 32
 * waiting, though each was under 64 KiB. Such a body now takes nothing until it has read past the
 * small size, and only then its share, waiting there unread further.
 */
import assert from "node:assert/strict";
import { OpenAPIHono } from "@hono/zod-openapi";
import { memoryLogger } from "../../core/log.ts";
import type { AppEnv } from "../../routes/env.ts";
import { createErrorHandler } from "../../routes/errors.ts";
import { bodyReader, readBodyCapped } from "../../routes/middleware/body.ts";
import { BodyBudget, processBodyBudget, SMALL_BODY_BYTES } from "../../routes/middleware/body_budget.ts";
import { startServer } from "../../routes/server.ts";
import { createCommerceWorld } from "../commerce/_helpers.ts";

const KiB = 1024;
const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Reads an HTTP/1.1 answer off `conn` until the server closes it (the requests say `Connection:
 * close`): an answer's body may come chunked, so its end is not where its JSON ends.
 */
async function answerOf(conn: Deno.Conn): Promise<string> {
  let text = "";
  const buf = new Uint8Array(4096);
  while (true) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) break;
    text += dec.decode(buf.subarray(0, n));
  }
  return text;
}

const chunk = (bytes: Uint8Array) => [enc.encode(`${bytes.length.toString(16)}\r\n`), bytes, enc.encode("\r\n")];

async function writeAll(conn: Deno.Conn, parts: Uint8Array[]) {
  for (const p of parts) {
    for (let at = 0; at < p.length;) at += await conn.write(p.subarray(at));
  }
}

Deno.test("Chunked bodies: 100 concurrent small chunked purchases from one address, held open together, are all read and answered (none 503 server_busy), over a real socket", async () => {
  await using w = await createCommerceWorld({ env: { STOREFRONT_RATE_LIMIT: "100000" } });
  const server = startServer(w.app.fetch);
  const { token } = await w.agents.issue();
  const heldBefore = processBodyBudget.held;
  const body = enc.encode(JSON.stringify({ amountUsd: "1.000000" }));
  const conns = await Promise.all(
    Array.from({ length: 100 }, () => Deno.connect({ hostname: "127.0.0.1", port: server.port })),
  );
  try {
    // Each sends its head and the first half of its body, chunked, and holds the rest.
    await Promise.all(conns.map((conn) =>
      writeAll(conn, [
        enc.encode(
          `POST /plans/${w.plan.id}/purchase HTTP/1.1\r\nHost: store.test\r\nZc-Agent-Authorization: Bearer ${token}\r\n` +
            `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
        ),
        ...chunk(body.subarray(0, 10)),
      ])
    ));
    const answers = conns.map(answerOf);
    // Every request is in, reading its body (a refused one would be answered at once).
    const early = await Promise.race([
      Promise.any(answers),
      new Promise<null>((r) => setTimeout(() => r(null), 300)),
    ]);
    assert.equal(early, null, `answered before its body ended: ${early?.slice(0, 200)}`);
    assert.equal(processBodyBudget.held, heldBefore, "small bodies take no share");
    await Promise.all(conns.map((conn) => writeAll(conn, [...chunk(body.subarray(10)), enc.encode("0\r\n\r\n")])));
    const statuses = (await Promise.all(answers)).map((t) => /^HTTP\/1\.1 (\d{3})/.exec(t)?.[1]);
    assert.deepEqual(statuses, Array(100).fill("402"), "each read and answered with its payment challenge");
  } finally {
    for (const conn of conns) conn.close();
    await server.shutdown();
  }
  assert.equal(processBodyBudget.held, heldBefore);
});

/** An app whose `/echo` answers the length of the body it read, with `beforeRead` counted. */
function echoApp(budget: BodyBudget) {
  const app = new OpenAPIHono<AppEnv>();
  app.onError(createErrorHandler(memoryLogger(), "message"));
  const seen = { beforeRead: 0 };
  app.use(
    "/echo",
    bodyReader({
      limit: 1024 * KiB,
      json: false,
      budget,
      holder: () => "203.0.113.9",
      beforeRead: () => Promise.resolve(void seen.beforeRead++),
    }),
  );
  app.post("/echo", (c) => c.json({ length: c.get("rawBody")!.length }));
  app.post(
    "/capped",
    async (c) => c.json({ length: (await readBodyCapped(c.req.raw, 1024 * KiB, { budget })).length }),
  );
  return { app, seen };
}

/** A chunked body (no Content-Length) of `n` pieces of 16 KiB, counting the pieces pulled. */
function chunkedBody(n: number) {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled === n) return controller.close();
      pulled++;
      controller.enqueue(new Uint8Array(16 * KiB).fill(120));
    },
  }, { highWaterMark: 0 });
  return { stream, pulled: () => pulled };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

Deno.test("Chunked bodies: a small one passes a full budget; a large one reads past the small size, then takes its share and waits there, unread further, and runs beforeRead again once let in", async () => {
  for (const path of ["/echo", "/capped"]) {
    const budget = new BodyBudget({ bytes: 2048 * KiB, maxWaiting: 4, waitMs: 30_000 });
    const { app, seen } = echoApp(budget);
    const giveBack = await budget.take(2048 * KiB);

    const small = chunkedBody(SMALL_BODY_BYTES / (16 * KiB));
    const served = await app.request(path, { method: "POST", body: small.stream });
    assert.equal(served.status, 200, `${path}: a small chunked body never waits`);
    assert.deepEqual(await served.json(), { length: SMALL_BODY_BYTES });

    const large = chunkedBody(40);
    const answer = app.request(path, { method: "POST", body: large.stream });
    await settle();
    assert.equal(budget.waiting, 1, `${path}: it waits for its share`);
    const pulledWaiting = large.pulled();
    assert.ok(
      pulledWaiting <= SMALL_BODY_BYTES / (16 * KiB) + 2,
      `${path}: ${pulledWaiting} pieces read while waiting`,
    );
    await settle();
    assert.equal(large.pulled(), pulledWaiting, `${path}: nothing more is read while it waits`);
    giveBack();
    const res = await answer;
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { length: 40 * 16 * KiB });
    if (path === "/echo") assert.equal(seen.beforeRead, 3, "once for the small body, twice for the large one");
    assert.equal(budget.held, 0, `${path}: its share is given back`);
  }
});

Deno.test("Chunked bodies: a large one whose share does not come in time is refused 503 server_busy, and holds nothing", async () => {
  const budget = new BodyBudget({ bytes: 2048 * KiB, maxWaiting: 0, waitMs: 30_000 });
  const { app } = echoApp(budget);
  const giveBack = await budget.take(2048 * KiB);
  try {
    const res = await app.request("/echo", { method: "POST", body: chunkedBody(40).stream });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "1");
    assert.deepEqual(await res.json(), { message: "Too many large request bodies at once, try again shortly" });
  } finally {
    giveBack();
  }
  assert.equal(budget.held, 0);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("Chunked bodies: the wait for a share midway is not charged to the body's read deadline (real socket, short deadline)", async () => {
  const budget = new BodyBudget({ bytes: 2048 * KiB, maxWaiting: 4, waitMs: 30_000 });
  const { app } = echoApp(budget);
  const server = startServer(app.fetch, {
    bodyIdleTimeoutMs: 1_000,
    bodyReadDeadline: { floorMs: 300, minBytesPerS: 1024 * KiB },
  });
  const giveBack = await budget.take(2048 * KiB);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    await writeAll(conn, [
      enc.encode(`POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`),
      ...chunk(new Uint8Array(80 * KiB).fill(120)),
    ]);
    const answer = answerOf(conn);
    while (budget.waiting === 0) await sleep(10);
    // Longer than the whole deadline of what it read so far (300 ms and 80 KiB at 1 MiB/s).
    await sleep(600);
    // The rest is sent while it still waits (TCP holds it), so nothing but the wait lies between.
    await writeAll(conn, [...chunk(new Uint8Array(20 * KiB).fill(120)), enc.encode("0\r\n\r\n")]);
    giveBack();
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 200/, text.slice(0, 300));
    assert.match(text, /\{"length":102400\}/);
  } finally {
    conn.close();
    await server.shutdown();
  }
});
