/**
 * A client's parallel refreshes (the MCP SDK refreshes once per request that met a 401) do not all
 * present the same token: one that read the newer token after another refresh saved it rotates
 * that one, while a slower one still presents the first. Within the reuse grace the slower one gets
 * the live head of the rotations; it used to revoke the family when the successor had been spent
 * (tests/mcp/oauth_refresh_race_test.ts failed that way under load).
 */
import assert from "node:assert/strict";
import { FixedClock } from "../../core/clock.ts";
import { RefreshTokens } from "../../core/identity/refresh_tokens.ts";

const GRACE = { reuseGraceS: 30 };

async function family() {
  const kv = await Deno.openKv(":memory:");
  const clock = new FixedClock();
  const tokens = new RefreshTokens(kv, clock, 86_400);
  const op = kv.atomic();
  const first = await tokens.issueInto(op, "cr_1");
  assert.ok((await op.commit()).ok);
  return { kv, clock, tokens, first: first.token, [Symbol.dispose]: () => kv.close() };
}

Deno.test("RefreshTokens.rotate(): a token presented again in the grace after its successor was rotated gets the live head, and the family lives", async () => {
  using f = await family();
  const r1 = (await f.tokens.rotate(f.first, undefined, GRACE)).token;
  f.clock.advance(1_000);
  const r2 = (await f.tokens.rotate(r1, undefined, GRACE)).token;
  f.clock.advance(1_000);
  const late = await f.tokens.rotate(f.first, undefined, GRACE);
  assert.equal(late.token, r2, "the head of the rotations, not the spent successor");
  assert.ok(late.expiresIn > 0);
  // The family is alive: the head rotates as usual.
  const r3 = (await f.tokens.rotate(r2, undefined, GRACE)).token;
  assert.notEqual(r3, r2);
});

Deno.test("RefreshTokens.rotate(): past the grace of any rotation on the way, a token presented again is a replay and revokes the family", async () => {
  using f = await family();
  const r1 = (await f.tokens.rotate(f.first, undefined, GRACE)).token;
  f.clock.advance(31_000);
  const r2 = (await f.tokens.rotate(r1, undefined, GRACE)).token;
  // The first token's own rotation is 31 s old: a replay.
  await assert.rejects(f.tokens.rotate(f.first, undefined, GRACE), (e: Error & { code?: string }) => {
    assert.equal(e.code, "invalid_refresh_token");
    return true;
  });
  await assert.rejects(f.tokens.rotate(r2, undefined, GRACE), "the head is refused too: the family is revoked");
});

Deno.test("RefreshTokens.rotate(): without a grace, a token presented again revokes the family even with its successor unused", async () => {
  using f = await family();
  const r1 = (await f.tokens.rotate(f.first)).token;
  await assert.rejects(f.tokens.rotate(f.first));
  await assert.rejects(f.tokens.rotate(r1), "the family is revoked");
});

Deno.test("RefreshTokens.rotate(): the grace follows at most four rotations; a token five behind is a replay", async () => {
  using f = await family();
  let head = f.first;
  for (let i = 0; i < 5; i++) head = (await f.tokens.rotate(head, undefined, GRACE)).token;
  await assert.rejects(f.tokens.rotate(f.first, undefined, GRACE), "five rotations behind");
  await assert.rejects(f.tokens.rotate(head, undefined, GRACE), "the family is revoked");
});

Deno.test("RefreshTokens.rotate(): the grace follows four rotations to the live head", async () => {
  using f = await family();
  let head = f.first;
  for (let i = 0; i < 4; i++) head = (await f.tokens.rotate(head, undefined, GRACE)).token;
  assert.equal((await f.tokens.rotate(f.first, undefined, GRACE)).token, head);
});
