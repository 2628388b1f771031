import assert from "node:assert/strict";
import { AdminUsageError, runAdmin } from "../../cli/commands.ts";
import { FixedClock } from "../../core/clock.ts";
import { PayproxySecretStore, SecretStoreError } from "../../core/payproxy/secrets.ts";
import { SignatureVerifier, signRequest } from "../../core/payproxy/signature.ts";
import { seedDemo } from "../../fixtures/demo.ts";
import { DEMO_PAYPROXY_SELLER, seedPayproxySecret } from "../../fixtures/payproxy_demo.ts";
import { createTestWorld } from "../_helpers.ts";

async function withStore(fn: (store: PayproxySecretStore, kv: Deno.Kv, clock: FixedClock) => Promise<void>) {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock();
    await fn(new PayproxySecretStore(kv, clock), kv, clock);
  } finally {
    kv.close();
  }
}

Deno.test("PayproxySecretStore.create() makes one current secret per seller", () =>
  withStore(async (store) => {
    const s = await store.create("seller-a");
    assert.match(s.kid, /^ppk_[A-Za-z0-9_-]{16}$/);
    assert.match(s.secret, /^pps_[A-Za-z0-9_-]{43}$/);
    assert.equal(s.status, "current");
    assert.deepEqual(await store.current("seller-a"), { kid: s.kid, secret: s.secret });
    await assert.rejects(store.create("seller-a"), SecretStoreError);
    await assert.rejects(store.create("bad seller id"), SecretStoreError);
  }));

Deno.test("PayproxySecretStore.create() run concurrently leaves exactly one current secret", () =>
  withStore(async (store) => {
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => store.create("seller-b")));
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    assert.equal((await store.list("seller-b")).filter((s) => s.status === "current").length, 1);
  }));

Deno.test("PayproxySecretStore rotation: current and previous verify until the previous is retired", () =>
  withStore(async (store, kv, clock) => {
    const verifier = new SignatureVerifier({ keys: store, kv, clock });
    let n = 0;
    const verifyWith = async (key: { kid: string; secret: string }) => {
      const body = '{"query":"x"}';
      const url = "http://svc.test/payproxy/v2/search?data_model_id=dm_x";
      const s = await signRequest({
        ...key,
        t: Math.floor(clock.now().getTime() / 1000),
        method: "POST",
        url,
        body,
        requestId: `r${++n}`,
      });
      return verifier.verify({
        signature: s.header,
        method: "POST",
        url,
        body: new TextEncoder().encode(body),
        requestId: `r${n}`,
        agentId: null,
      });
    };
    const first = await store.create("seller-c");
    const second = await store.rotate("seller-c");
    assert.notEqual(second.kid, first.kid);
    assert.equal((await store.get(first.kid))!.status, "previous");
    assert.equal((await verifyWith(first)).sellerId, "seller-c");
    assert.equal((await verifyWith(second)).sellerId, "seller-c");

    const third = await store.rotate("seller-c");
    assert.equal((await store.get(first.kid))!.status, "retired", "a second rotation retires the oldest");
    assert.equal((await store.get(second.kid))!.status, "previous");
    await assert.rejects(verifyWith(first), (e: Error) => (e.cause as { reason: string }).reason === "retired_kid");

    const retired = await store.retire("seller-c");
    assert.equal(retired.kid, second.kid);
    assert.equal("secret" in retired, false);
    await assert.rejects(verifyWith(second));
    await verifyWith(third);
    await assert.rejects(store.retire("seller-c"), SecretStoreError, "nothing left to retire");
    assert.equal((await store.get(second.kid))!.secret, "", "a retired secret is not kept");

    assert.equal(await store.byKid(second.kid), null, "byKid() hides retired keys");
    assert.deepEqual(await store.byKid(third.kid), { sellerId: "seller-c", secret: third.secret });

    const listed = await store.list("seller-c");
    assert.deepEqual(listed.map((s) => s.status).sort(), ["current", "retired", "retired"]);
    for (const s of listed) assert.equal("secret" in s, false);
  }));

Deno.test("admin payproxy-secret create, rotate, retire and list", async () => {
  await using w = await createTestWorld();
  const created = await runAdmin(w.deps, ["payproxy-secret", "create", "--seller", "demo"]) as {
    kid: string;
    secret: string;
  };
  assert.match(created.secret, /^pps_/);
  await assert.rejects(runAdmin(w.deps, ["payproxy-secret", "create", "--seller", "demo"]), AdminUsageError);
  await assert.rejects(runAdmin(w.deps, ["payproxy-secret", "retire", "--seller", "demo"]), AdminUsageError);
  const rotated = await runAdmin(w.deps, ["payproxy-secret", "rotate", "--seller", "demo"]) as { kid: string };
  const retired = await runAdmin(w.deps, ["payproxy-secret", "retire", "--seller", "demo"]) as { kid: string };
  assert.equal(retired.kid, created.kid);
  const listed = await runAdmin(w.deps, ["payproxy-secret", "list", "--seller", "demo"]) as { kid: string }[];
  assert.deepEqual(listed.map((s) => s.kid).sort(), [created.kid, rotated.kid].sort());
  assert.ok(!JSON.stringify(listed).includes("pps_"), "listings never show secrets");
  await assert.rejects(runAdmin(w.deps, ["payproxy-secret", "rotate"]), AdminUsageError);
  const byKid = await runAdmin(w.deps, ["payproxy-secret", "retire", "--seller", "demo", "--kid", rotated.kid]) as {
    status: string;
  };
  assert.equal(byKid.status, "retired");
});

Deno.test("seedPayproxySecret gives the demo seller one signing secret, idempotently", async () => {
  await using w = await createTestWorld();
  await seedDemo(w.deps, [seedPayproxySecret]);
  await seedPayproxySecret(w.deps, (await seedDemo(w.deps)).ids);
  const listed = await w.deps.payproxy.secrets.list(DEMO_PAYPROXY_SELLER);
  assert.deepEqual(listed.map((s) => s.status), ["current"]);
});
