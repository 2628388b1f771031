import assert from "node:assert/strict";
import { isBusy, retryBusy, retryBusyKv } from "../../core/store/kv_busy_retry.ts";

Deno.test("retryBusy() retries SQLite's busy lock and returns the first success", async () => {
  let calls = 0;
  // A stand-in for the KV backend's lock error (named as such): two busy answers, then the result.
  const out = await retryBusy(() => {
    calls++;
    if (calls < 3) return Promise.reject(new TypeError("database is locked"));
    return Promise.resolve("done");
  });
  assert.equal(out, "done");
  assert.equal(calls, 3);
});

Deno.test("retryBusy() throws any other error at once", async () => {
  let calls = 0;
  await assert.rejects(
    () =>
      retryBusy(() => {
        calls++;
        return Promise.reject(new TypeError("Value too large"));
      }),
    /Value too large/,
  );
  assert.equal(calls, 1);
  assert.equal(isBusy(new TypeError("database is locked")), true);
  assert.equal(isBusy("database is locked"), false, "only errors");
});

Deno.test("retryBusyKv(): atomic chains, checks and reads behave as on the plain KV", async () => {
  const kv = retryBusyKv(await Deno.openKv(":memory:"));
  try {
    const first = await kv.atomic().check({ key: ["k"], versionstamp: null }).set(["k"], 1).sum(["n"], 2n).commit();
    assert.equal(first.ok, true);
    const again = await kv.atomic().check({ key: ["k"], versionstamp: null }).set(["k"], 2).commit();
    assert.equal(again.ok, false, "a failed check still fails");
    assert.equal((await kv.get(["k"])).value, 1);
    assert.equal((await kv.get<Deno.KvU64>(["n"])).value?.value, 2n);
    const listed = [];
    for await (const e of kv.list({ prefix: [] })) listed.push(e.key);
    assert.equal(listed.length, 2);
  } finally {
    kv.close();
  }
});
