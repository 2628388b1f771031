/**
 * Payproxy signature costs (target: verification <= 50 us per request).
 *
 *   deno bench --allow-all bench/payproxy_signature_bench.ts
 *
 * "check" is the verification itself (header parse, canonical string, SHA-256 of a 1 KiB body,
 * HMAC verify) with the key already looked up; the store row adds the secret lookup through
 * PayproxySecretStore (KV behind a 1 s record cache); the last row adds signing and the
 * single-use mark (an atomic KV write), which every real request also pays.
 */
import { createHmac } from "node:crypto";
import { FixedClock, unixSeconds } from "../core/clock.ts";
import { HmacSha256 } from "../core/crypto.ts";
import { PayproxySecretStore } from "../core/payproxy/secrets.ts";
import { SignatureVerifier, signRequest, type VerificationKey } from "../core/payproxy/signature.ts";

const clock = new FixedClock();
const kv = await Deno.openKv(":memory:");
const store = new PayproxySecretStore(kv, clock);
const { kid, secret } = await store.create("bench-seller");
const record: VerificationKey = { kid, sellerId: "bench-seller", secret, status: "current" };
const memoryKeys = { get: (k: string) => Promise.resolve(k === kid ? record : null) };

const url = "http://127.0.0.1:8000/payproxy/v2/search?data_model_id=dm_01jd3k6q8s4m0v2x9c7b5n1r3t&search_version=2";
const body = new TextEncoder().encode(
  JSON.stringify({ query: "climate policy ".repeat(64).trim(), similarity_top_k: 9 }),
);
const t = unixSeconds(clock);
const signed = await signRequest({
  secret,
  kid,
  t,
  method: "POST",
  url,
  body,
  requestId: "req-bench",
  agentId: "agent-1",
});
const input = {
  signature: signed.header,
  method: "POST",
  url,
  body,
  requestId: "req-bench",
  agentId: "agent-1",
};

const inMemory = new SignatureVerifier({ keys: memoryKeys, kv, clock });
const viaKv = new SignatureVerifier({ keys: store, kv, clock });
await inMemory.check(input); // warm the imported-key cache

Deno.bench(
  "payproxy check(): parse + canonical + sha256(1 KiB) + HMAC verify",
  { group: "verify", baseline: true },
  async () => {
    await inMemory.check(input);
  },
);

Deno.bench("payproxy check() with the secret from the store (KV + 1 s cache)", { group: "verify" }, async () => {
  await viaKv.check(input);
});

let n = 0;
Deno.bench("payproxy signRequest() (1 KiB body)", { group: "sign" }, async () => {
  await signRequest({ secret, kid, t, method: "POST", url, body, requestId: `req-${n++}`, agentId: "agent-1" });
});

Deno.bench("payproxy signRequest() + verify() incl. KV lookup and single-use mark", { group: "sign" }, async () => {
  const requestId = `req-${n++}`;
  const s = await signRequest({ secret, kid, t, method: "POST", url, body, requestId, agentId: "agent-1" });
  await viaKv.verify({ ...input, signature: s.header, requestId });
});

// Why core/crypto.ts keeps its own HMAC: the pad states are hashed once per key, where
// `createHmac` re-keys for every message. Same 200-byte canonical-string-sized message.
const message = "x".repeat(200);
const keyed = new HmacSha256(secret);
Deno.bench("HMAC-SHA256: HmacSha256 (pad states precomputed)", { group: "hmac", baseline: true }, () => {
  keyed.digest(message);
});
Deno.bench("HMAC-SHA256: node:crypto createHmac per message", { group: "hmac" }, () => {
  createHmac("sha256", secret).update(message).digest();
});
