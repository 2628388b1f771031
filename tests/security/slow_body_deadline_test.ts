/**
 * A request body's read deadline (routes/server.ts, `BODY_READ_FLOOR_S` and `BODY_MIN_BYTES_PER_S`):
 * the idle timeout alone (nothing for 10 s) let a body sent a byte at a time within it hold its share
 * of the body budget for as long as its sender liked, so a body needing the whole budget (a tenant's
 * large article ingest) waited for a moment with nothing held, and every large body queued behind it
 * with it. A body now gets a floor, then as long as it keeps a minimum average rate; a slower one is
 * answered 408 (the stalled body's answer, `request_timeout`; `{message}` on the analytics routes)
 * and its share given back. Real slow clients on real sockets, with short settings.
 */
import assert from "node:assert/strict";
import { processBodyBudget } from "../../routes/middleware/body_budget.ts";
import { startServer } from "../../routes/server.ts";
import { createTestWorld } from "../_helpers.ts";

const enc = new TextEncoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A tenant's event batch of exactly `bytes` bytes (white space before it). */
function batchOf(bytes: number): Uint8Array {
  const json = JSON.stringify({ events: [{ event_type: "widget_load" }] });
  return enc.encode(" ".repeat(bytes - json.length) + json);
}

/**
 * Sends `body` to `POST /v1/events` on a new connection, `chunk` bytes every `everyMs` (for at most
 * 3 s), and reads the answer until the connection closes (or the answer's JSON ends).
 */
async function trickle(port: number, key: string, body: Uint8Array, chunk: number, everyMs: number) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(enc.encode(
    `POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\n\r\n`,
  ));
  let text = "";
  const answer = (async () => {
    const buf = new Uint8Array(4096);
    while (!/\r\n\r\n[\s\S]*\}/.test(text)) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    return text;
  })();
  let sent = 0;
  const giveUpAt = performance.now() + 3_000;
  while (sent < body.length && text === "" && performance.now() < giveUpAt) {
    await conn.write(body.subarray(sent, sent + chunk)).catch(() => 0);
    sent += chunk;
    if (sent < body.length) await sleep(everyMs);
  }
  if (sent < body.length && text === "") conn.closeWrite().catch(() => {});
  const out = await answer;
  conn.close();
  return { text: out, sent: Math.min(sent, body.length) };
}

Deno.test("security: a request body trickled within the idle timeout but under the minimum average rate is answered 408, and its body-budget share is given back", async () => {
  await using w = await createTestWorld();
  const server = startServer(w.app.fetch, {
    bodyIdleTimeoutMs: 1_000,
    bodyReadDeadline: { floorMs: 400, minBytesPerS: 1_000 },
  });
  const { key } = await w.tenantWithKey();
  const heldBefore = processBodyBudget.held;
  try {
    const started = performance.now();
    // 100 KB declared (it takes a share of the budget), 10 bytes every 100 ms: never idle 1 s,
    // 100 bytes/s against the 1,000 it must average.
    let heldWhileSending = 0;
    const watching = setInterval(() => (heldWhileSending = Math.max(heldWhileSending, processBodyBudget.held)), 20);
    const { text, sent } = await trickle(server.port, key, batchOf(100_000), 10, 100).finally(() =>
      clearInterval(watching)
    );
    const tookMs = performance.now() - started;
    assert.match(text, /^HTTP\/1\.1 408/);
    assert.match(text, /connection: close/i);
    assert.match(text, /Request body too slow: after its first 0.4 s it must average 1000 bytes\/s/);
    assert.ok(heldWhileSending - heldBefore >= 100_000, "the body held its share while it was read");
    assert.equal(processBodyBudget.held, heldBefore, "its share is given back");
    // Cut near its deadline (0.4 s and 1 ms a byte received), not at the end of its 100 KB.
    assert.ok(sent < 2_000, `${sent} bytes sent`);
    assert.ok(tookMs < 3_000, `answered after ${Math.round(tookMs)} ms`);
  } finally {
    await server.shutdown(1000);
  }
});

Deno.test("security: a request body sent past the read deadline's floor at the minimum average rate or faster is read whole", async () => {
  await using w = await createTestWorld();
  const server = startServer(w.app.fetch, {
    bodyIdleTimeoutMs: 1_000,
    bodyReadDeadline: { floorMs: 200, minBytesPerS: 1_000 },
  });
  const { key } = await w.tenantWithKey();
  try {
    const started = performance.now();
    // 2,000 bytes, 300 every 100 ms (about 3,000 bytes/s): it takes longer than the floor.
    const { text, sent } = await trickle(server.port, key, batchOf(2_000), 300, 100);
    assert.ok(performance.now() - started > 500, "it took longer than the floor");
    assert.equal(sent, 2_000);
    assert.doesNotMatch(text, /^HTTP\/1\.1 408/);
    assert.match(text, /^HTTP\/1\.1 202/);
  } finally {
    await server.shutdown(1000);
  }
});

Deno.test("security: a request body that waited, unread, for room in the body budget longer than the read deadline's floor is then read whole", async () => {
  await using w = await createTestWorld();
  const server = startServer(w.app.fetch, {
    bodyIdleTimeoutMs: 1_000,
    bodyReadDeadline: { floorMs: 300, minBytesPerS: 100_000 },
  });
  const { key } = await w.tenantWithKey();
  // The budget is full: the next large body waits unread (its bytes held back by TCP).
  const giveBack = await processBodyBudget.take(Number.MAX_SAFE_INTEGER);
  const body = batchOf(200_000);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    await conn.write(enc.encode(
      `POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\n\r\n`,
    ));
    await conn.write(body.subarray(0, 1_000));
    for (let i = 0; i < 100 && processBodyBudget.waiting === 0; i++) await sleep(10);
    assert.equal(processBodyBudget.waiting, 1, "the body waits for room");
    await sleep(600);
    giveBack();
    // The rest at about 1 MB/s, ten times the minimum rate.
    for (let sent = 1_000; sent < body.length; sent += 10_000) {
      await conn.write(body.subarray(sent, sent + 10_000));
      await sleep(10);
    }
    let text = "";
    const buf = new Uint8Array(4096);
    while (!/\r\n\r\n[\s\S]*\}/.test(text)) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    assert.match(text, /^HTTP\/1\.1 202/);
  } finally {
    giveBack();
    conn.close();
    await server.shutdown(1000);
  }
});
