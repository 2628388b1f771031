/**
 * The local chain's in-memory store (fixtures/chain/memory_store.ts) answers as leveldown does where
 * ganache reads it: bytes in, bytes out, a missing key `notFound`, ranges iterated in byte order
 * (reversed, limited) over a snapshot, and a chained batch written only by its `write`.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { MemoryStore } from "../../fixtures/chain/memory_store.ts";

const b = (s: string) => Buffer.from(s, "latin1");

function call<T>(fn: (cb: (err: Error | null, value?: T) => void) => void): Promise<T | undefined> {
  return new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value))));
}

/** Every key (as text) an iterator over `opts` yields. */
async function keysOf(store: MemoryStore, opts: Parameters<MemoryStore["iterator"]>[0]): Promise<string[]> {
  const it = store.iterator(opts);
  const out: string[] = [];
  for (;;) {
    const key = await new Promise<unknown>((resolve, reject) => it.next((err, k) => (err ? reject(err) : resolve(k))));
    if (key === undefined) break;
    out.push(Buffer.from(key as Uint8Array).toString("latin1"));
  }
  await call((cb) => it.end(cb));
  return out;
}

Deno.test("MemoryStore: gets what was put as bytes, and a missing key as notFound", async () => {
  const store = new MemoryStore();
  await call((cb) => store.open({}, cb));
  await call((cb) => store.put(b("!b!\x01"), b("one"), {}, cb));
  assert.deepEqual(await call((cb) => store.get(b("!b!\x01"), { asBuffer: true }, cb)), b("one"));
  assert.equal(await call((cb) => store.get(b("!b!\x01"), { asBuffer: false }, cb)), "one");
  await assert.rejects(call((cb) => store.get(b("!b!\x02"), {}, cb)), (err: { notFound?: boolean }) => !!err.notFound);
  await call((cb) => store.del(b("!b!\x01"), {}, cb));
  await assert.rejects(call((cb) => store.get(b("!b!\x01"), {}, cb)));
});

Deno.test("MemoryStore: iterates a range in byte order, reversed and limited, over the entries as they were when it began", async () => {
  const store = new MemoryStore();
  await call((cb) => store.open({}, cb));
  const keys = ["!b!\xff", "!b!\x01", "!b!\x01\x00", "!a!z", "!c!"];
  await call((cb) => store.batch(keys.map((key) => ({ type: "put" as const, key: b(key), value: b("v") })), {}, cb));
  const sub = { gte: b("!b!"), lt: b('!b"') };
  assert.deepEqual(await keysOf(store, sub), ["!b!\x01", "!b!\x01\x00", "!b!\xff"]);
  assert.deepEqual(await keysOf(store, { ...sub, reverse: true, limit: 2 }), ["!b!\xff", "!b!\x01\x00"]);
  assert.deepEqual(await keysOf(store, { gt: b("!b!\x01"), lte: b("!b!\xff") }), ["!b!\x01\x00", "!b!\xff"]);

  const it = store.iterator({});
  await call((cb) => store.del(b("!a!z"), {}, cb));
  const first = await new Promise<unknown>((resolve) => it.next((_, k) => resolve(k)));
  assert.equal(Buffer.from(first as Uint8Array).toString("latin1"), "!a!z", "a snapshot");
});

Deno.test("MemoryStore: a chained batch changes nothing until written", async () => {
  const store = new MemoryStore();
  await call((cb) => store.open({}, cb));
  const batch = store.batch()!;
  batch.put(b("k"), b("v")).put(b("gone"), b("v")).del(b("gone"));
  await assert.rejects(call((cb) => store.get(b("k"), {}, cb)));
  await call((cb) => batch.write({}, cb));
  assert.deepEqual(await call((cb) => store.get(b("k"), {}, cb)), b("v"));
  await assert.rejects(call((cb) => store.get(b("gone"), {}, cb)));
});
