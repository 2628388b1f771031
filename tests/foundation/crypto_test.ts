import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { HmacSha256, timingSafeEqual } from "../../core/crypto.ts";

const hex = (h: string) => Uint8Array.from(h.match(/../g)!.map((b) => parseInt(b, 16)));

// RFC 4231, test cases 1, 2, 4 and 6 (a 131-byte key: longer than the block, so hashed first).
const RFC4231: [string, Uint8Array, Uint8Array | string, string][] = [
  [
    "case 1",
    new Uint8Array(20).fill(0x0b),
    "Hi There",
    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
  ],
  [
    "case 2",
    new TextEncoder().encode("Jefe"),
    "what do ya want for nothing?",
    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
  ],
  [
    "case 4",
    hex("0102030405060708090a0b0c0d0e0f10111213141516171819"),
    new Uint8Array(50).fill(0xcd),
    "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
  ],
  [
    "case 6",
    new Uint8Array(131).fill(0xaa),
    "Test Using Larger Than Block-Size Key - Hash Key First",
    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
  ],
];

Deno.test("HmacSha256.digest() matches the RFC 4231 vectors, keys longer than a block included", () => {
  for (const [name, key, data, want] of RFC4231) {
    const mac = new HmacSha256(key);
    assert.equal(mac.digest(data).toString("hex"), want, name);
    // Pad states are copied, never consumed: the same key MACs again identically.
    assert.equal(mac.digest(data).toString("hex"), want, `${name}, second use`);
  }
});

Deno.test("HmacSha256 takes a string key as its UTF-8 bytes, like createHmac", () => {
  const secret = "pps_ünïcode-secret";
  assert.equal(
    new HmacSha256(secret).digest("canonical\nstring").toString("hex"),
    createHmac("sha256", secret).update("canonical\nstring").digest("hex"),
  );
});

Deno.test("HmacSha256.verify() accepts only the exact MAC", () => {
  const mac = new HmacSha256("k");
  const good = mac.digest("message");
  assert.equal(mac.verify("message", good), true);
  const flipped = Uint8Array.from(good);
  flipped[31]! ^= 1;
  assert.equal(mac.verify("message", flipped), false);
  assert.equal(mac.verify("message", good.subarray(0, 16)), false, "a truncated MAC");
  assert.equal(mac.verify("message", new Uint8Array()), false, "an empty MAC");
  assert.equal(mac.verify("other", good), false);
});

Deno.test("timingSafeEqual() compares strings of any length", () => {
  assert.equal(timingSafeEqual("abc", "abc"), true);
  assert.equal(timingSafeEqual("abc", "abd"), false);
  assert.equal(timingSafeEqual("abc", "abcd"), false);
  assert.equal(timingSafeEqual("", ""), true);
});
