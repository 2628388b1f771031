import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { AppError } from "../../core/errors.ts";
import {
  canonicalString,
  parseSignatureHeader,
  pathAndQuery,
  SignatureError,
  SignatureVerifier,
  signRequest,
  type VerificationKey,
  type VerifyInput,
} from "../../core/payproxy/signature.ts";
import { sha256Hex } from "../../core/crypto.ts";
import { httpStatus } from "../../routes/error_status.ts";

interface Vector {
  name: string;
  secret: string;
  kid: string;
  t: string;
  method: string;
  path_and_query: string;
  body: string;
  body_sha256: string;
  request_id: string;
  agent_id: string | null;
  canonical: string;
  v1: string;
  header: string;
}

const vectors: Vector[] = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/payproxy_signing.json", import.meta.url)),
).vectors;

/** A key table in memory, for verifier tests that are not about the store. */
function keys(...records: VerificationKey[]) {
  const map = new Map(records.map((r) => [r.kid, r]));
  return { get: (kid: string) => Promise.resolve(map.get(kid) ?? null) };
}

const VECTOR_KEY: VerificationKey = {
  kid: vectors[0]!.kid,
  sellerId: "seller-a",
  secret: vectors[0]!.secret,
  status: "current",
};

function inputOf(v: Vector, over: Partial<VerifyInput> = {}): VerifyInput {
  return {
    signature: v.header,
    method: v.method,
    url: `http://svc.test${v.path_and_query}`,
    body: new TextEncoder().encode(v.body),
    requestId: v.request_id,
    agentId: v.agent_id,
    ...over,
  };
}

async function reason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) {
      assert.equal(httpStatus(err), 401);
      assert.equal(err.code, "invalid_payproxy_signature");
      assert.ok(err.cause instanceof SignatureError);
      return err.cause.reason;
    }
    if (err instanceof SignatureError) return err.reason;
    throw err;
  }
  throw new Error("expected a rejection");
}

Deno.test("signing vectors cover the six required cases", () => {
  assert.deepEqual(vectors.map((v) => v.name), [
    "no agent id",
    "agent id",
    "query string with encoded characters",
    "empty body",
    "unicode body",
    "repeated query keys",
  ]);
});

for (const v of vectors) {
  Deno.test(`signRequest() reproduces the independent vector: ${v.name}`, async () => {
    assert.equal(await sha256Hex(new TextEncoder().encode(v.body)), v.body_sha256);
    const signed = await signRequest({
      secret: v.secret,
      kid: v.kid,
      t: v.t,
      method: v.method,
      url: `http://svc.test:8000${v.path_and_query}`,
      body: v.body,
      requestId: v.request_id,
      agentId: v.agent_id,
    });
    assert.equal(signed.canonical, v.canonical);
    assert.equal(signed.v1, v.v1);
    assert.equal(signed.header, v.header);
    assert.equal(signed.headers["zc-agent-id"], v.agent_id ?? undefined);
  });

  Deno.test(`SignatureVerifier accepts the independent vector: ${v.name}`, async () => {
    const kv = await Deno.openKv(":memory:");
    try {
      const verifier = new SignatureVerifier({ keys: keys(VECTOR_KEY), kv, clock: new FixedClock(Number(v.t) * 1000) });
      const ok = await verifier.verify(inputOf(v));
      assert.equal(ok.kid, v.kid);
      assert.equal(ok.sellerId, "seller-a");
      assert.equal(ok.agentId, v.agent_id ?? "");
      assert.equal(
        canonicalString({
          ...v,
          pathAndQuery: v.path_and_query,
          bodySha256: v.body_sha256,
          requestId: v.request_id,
          agentId: v.agent_id,
        }),
        v.canonical,
      );
    } finally {
      kv.close();
    }
  });
}

Deno.test("parseSignatureHeader()", async (t) => {
  const v1 = "a".repeat(64);
  await t.step("accepts the parts in any order, with spaces after commas", () => {
    assert.deepEqual(parseSignatureHeader(`v1=${v1}, kid=k1 ,t=1795348800`), { t: "1795348800", kid: "k1", v1 });
  });
  const bad: [string, string | undefined, string][] = [
    ["missing header", undefined, "missing"],
    ["empty header", "", "missing"],
    ["unknown part", `t=1,kid=k,v1=${v1},v2=${v1}`, "unknown_part"],
    ["repeated part", `t=1,t=2,kid=k,v1=${v1}`, "duplicate_part"],
    ["missing kid", `t=1,v1=${v1}`, "malformed"],
    ["t of 21 digits", `t=${"1".repeat(21)},kid=k,v1=${v1}`, "malformed"],
    ["negative t", `t=-1,kid=k,v1=${v1}`, "malformed"],
    ["uppercase v1", `t=1,kid=k,v1=${"A".repeat(64)}`, "malformed"],
    ["63-character v1", `t=1,kid=k,v1=${"a".repeat(63)}`, "malformed"],
    ["part without =", `t=1,kid,v1=${v1}`, "malformed"],
    ["kid with a newline", `t=1,kid=a\nb,v1=${v1}`, "malformed"],
  ];
  for (const [name, header, want] of bad) {
    await t.step(`rejects ${name}`, () => {
      assert.throws(() => parseSignatureHeader(header), (err) => err instanceof SignatureError && err.reason === want);
    });
  }
  await t.step("accepts a t of exactly 20 digits (the timestamp check then refuses it)", () => {
    assert.equal(parseSignatureHeader(`t=${"9".repeat(20)},kid=k,v1=${v1}`).t, "9".repeat(20));
  });
});

Deno.test("pathAndQuery() keeps the serialized target verbatim", () => {
  assert.equal(pathAndQuery("http://h:1/a%20b?x=1&x=2&y=caf%C3%A9"), "/a%20b?x=1&x=2&y=caf%C3%A9");
  assert.equal(pathAndQuery("http://h/p?q=#frag"), "/p?q=");
  assert.equal(pathAndQuery("http://h"), "/");
  assert.equal(pathAndQuery("http://h?x=1"), "/?x=1");
  assert.equal(pathAndQuery("/already/a/path?z=1"), "/already/a/path?z=1");
  assert.equal(pathAndQuery(new Request("http://h/p?a=it's").url), "/p?a=it%27s");
});

Deno.test("SignatureVerifier", async (t) => {
  const v = vectors[1]!; // agent id
  const T = Number(v.t) * 1000;
  const kv = await Deno.openKv(":memory:");
  const clock = new FixedClock(T);
  let n = 0;
  // Each step signs afresh (a fresh request id), so single use never interferes.
  const fresh = async (over: { secret?: string; kid?: string; t?: number; body?: string; agentId?: string | null }) => {
    const requestId = `req-${++n}`;
    const s = await signRequest({
      secret: over.secret ?? v.secret,
      kid: over.kid ?? v.kid,
      t: over.t ?? Number(v.t),
      method: "POST",
      url: `http://svc.test${v.path_and_query}`,
      body: over.body ?? v.body,
      requestId,
      agentId: over.agentId === undefined ? v.agent_id : over.agentId,
    });
    return inputOf(v, { signature: s.header, requestId });
  };
  const previous: VerificationKey = { kid: "ppk_prev", sellerId: "seller-a", secret: "pps_prev", status: "previous" };
  const retired: VerificationKey = { kid: "ppk_old", sellerId: "seller-a", secret: "pps_old", status: "retired" };
  const verifier = new SignatureVerifier({ keys: keys(VECTOR_KEY, previous, retired), kv, clock });
  try {
    await t.step("accepts a timestamp exactly 300 s in the past or future", async () => {
      await verifier.verify(await fresh({ t: Number(v.t) - 300 }));
      await verifier.verify(await fresh({ t: Number(v.t) + 300 }));
    });
    await t.step("rejects a timestamp 301 s in the past", async () => {
      assert.equal(await reason(verifier.verify(await fresh({ t: Number(v.t) - 301 }))), "timestamp");
    });
    await t.step("rejects a timestamp 301 s in the future", async () => {
      assert.equal(await reason(verifier.verify(await fresh({ t: Number(v.t) + 301 }))), "timestamp");
    });
    await t.step("rejects a 20-digit timestamp", async () => {
      const input = await fresh({});
      const sig = String(input.signature).replace(/t=\d+/, `t=${"9".repeat(20)}`);
      assert.equal(await reason(verifier.verify({ ...input, signature: sig })), "timestamp");
    });
    await t.step("rejects an unknown kid (no configured secret)", async () => {
      assert.equal(await reason(verifier.verify(await fresh({ kid: "ppk_nobody" }))), "unknown_kid");
    });
    await t.step("accepts the previous secret until it is retired", async () => {
      assert.equal((await verifier.verify(await fresh({ kid: "ppk_prev", secret: "pps_prev" }))).kid, "ppk_prev");
      assert.equal(await reason(verifier.verify(await fresh({ kid: "ppk_old", secret: "pps_old" }))), "retired_kid");
    });
    await t.step("rejects a signature made with another secret", async () => {
      assert.equal(await reason(verifier.verify(await fresh({ secret: "pps_wrong" }))), "mismatch");
    });
    await t.step("rejects a tampered body, path, method, agent id or request id", async () => {
      const input = await fresh({});
      const cases: Partial<VerifyInput>[] = [
        { body: new TextEncoder().encode(v.body + " ") },
        { url: `http://svc.test${v.path_and_query}&x=1` },
        { url: `http://svc.test${v.path_and_query.replace("dm_", "DM_")}` },
        { method: "PUT" },
        { agentId: "someone-else" },
        { agentId: null },
        { requestId: "req-other" },
      ];
      for (const over of cases) assert.equal(await reason(verifier.verify({ ...input, ...over })), "mismatch");
    });
    await t.step("signs a missing agent id as the empty string", async () => {
      const input = await fresh({ agentId: null });
      assert.equal((await verifier.verify({ ...input, agentId: undefined })).agentId, "");
    });
    await t.step("rejects a missing zc-request-id", async () => {
      const input = await fresh({});
      assert.equal(await reason(verifier.verify({ ...input, requestId: undefined })), "request_id");
      assert.equal(await reason(verifier.verify({ ...input, requestId: "" })), "request_id");
    });
    await t.step("rejects a signature seen again within the window", async () => {
      const input = await fresh({});
      await verifier.verify(input);
      assert.equal(await reason(verifier.verify(input)), "replay");
      clock.advance(299_000);
      assert.equal(await reason(verifier.verify(input)), "replay");
      clock.advance(2_000);
      assert.equal(await reason(verifier.verify(input)), "timestamp");
      clock.set(T);
    });
    await t.step("lets exactly one of 25 concurrent replays through", async () => {
      const input = await fresh({});
      const results = await Promise.allSettled(Array.from({ length: 25 }, () => verifier.verify(input)));
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
      for (const r of results) {
        if (r.status === "rejected") {
          assert.ok(r.reason instanceof AppError && httpStatus(r.reason) === 401);
          assert.equal((r.reason.cause as SignatureError).reason, "replay");
        }
      }
    });
    await t.step("a failed verification does not consume the signature", async () => {
      const input = await fresh({});
      await reason(verifier.verify({ ...input, requestId: "req-tampered" }));
      await verifier.verify(input);
    });
    await t.step("check() verifies without consuming", async () => {
      const input = await fresh({});
      await verifier.check(input);
      await verifier.check(input);
      await verifier.verify(input);
    });
  } finally {
    kv.close();
  }
});
