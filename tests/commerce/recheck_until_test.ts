/**
 * An unresolved evm settlement is rechecked until eight days after its claim, or a day past its
 * authorization's `validBefore` when that is later: a payer picks `validBefore` freely (x402), and
 * an authorization still usable may yet be submitted and move money. Giving it up on day eight left
 * a payment that could still settle to the operator, with nobody watching the chain; a `validBefore`
 * far ahead keeps it rechecked at most 31 days after its claim (bounded work, a list that drains).
 */
import assert from "node:assert/strict";
import {
  recheckUntilMs,
  SETTLE_RECHECK_HORIZON_MS,
  SETTLE_RECHECK_MAX_AGE_MS,
} from "../../core/commerce/settle_sweep.ts";

const DAY = 24 * 60 * 60_000;
const CLAIMED = Date.parse("2026-11-01T00:00:00Z");
const authorization = (validBeforeMs: number) => ({
  from: "0x" + "1".repeat(40),
  value: "1000000",
  validBefore: String(Math.floor(validBeforeMs / 1000)),
  nonce: "0x" + "3".repeat(64),
});

Deno.test("recheckUntilMs(): eight days after the claim for an authorization that ends sooner, or none", () => {
  const createdAt = new Date(CLAIMED).toISOString();
  assert.equal(SETTLE_RECHECK_MAX_AGE_MS, 8 * DAY);
  assert.equal(recheckUntilMs({ createdAt }), CLAIMED + 8 * DAY);
  assert.equal(recheckUntilMs({ createdAt, authorization: authorization(CLAIMED + 3_600_000) }), CLAIMED + 8 * DAY);
});

Deno.test("recheckUntilMs(): a day past validBefore for an authorization usable longer than eight days", () => {
  const createdAt = new Date(CLAIMED).toISOString();
  assert.equal(
    recheckUntilMs({ createdAt, authorization: authorization(CLAIMED + 30 * DAY) }),
    CLAIMED + 31 * DAY,
  );
  // A validBefore that is not a plain count of seconds is not believed.
  assert.equal(
    recheckUntilMs({ createdAt, authorization: { ...authorization(0), validBefore: "1e20" } }),
    CLAIMED + 8 * DAY,
  );
});

Deno.test("recheckUntilMs(): never past the horizon after the claim, however far ahead validBefore is", () => {
  const createdAt = new Date(CLAIMED).toISOString();
  assert.equal(SETTLE_RECHECK_HORIZON_MS, 31 * DAY);
  for (const validBefore of ["9".repeat(15), "9".repeat(16), "9".repeat(78)]) {
    assert.equal(
      recheckUntilMs({ createdAt, authorization: { ...authorization(0), validBefore } }),
      CLAIMED + SETTLE_RECHECK_HORIZON_MS,
      `${validBefore.length} digits`,
    );
  }
});
