import assert from "node:assert/strict";
import { checkAmount, formatUsd, parseAmountUsd } from "../../core/commerce/money.ts";
import { AppError } from "../../core/errors.ts";

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof AppError);
    return err.code;
  }
  return "no error";
};

Deno.test("parseAmountUsd() reads six-decimal whole-cent strings into micro-USD", () => {
  assert.equal(parseAmountUsd("5.000000"), 5_000_000);
  assert.equal(parseAmountUsd("0.500000"), 500_000);
  assert.equal(parseAmountUsd("12.340000"), 12_340_000);
  assert.equal(parseAmountUsd("7"), 7_000_000);
  assert.equal(parseAmountUsd("0.1"), 100_000);
});

Deno.test("parseAmountUsd() names each bad amount with the spec's code", () => {
  assert.equal(code(() => parseAmountUsd(undefined)), "amount_required");
  assert.equal(code(() => parseAmountUsd(null)), "amount_required");
  assert.equal(code(() => parseAmountUsd("")), "amount_required");
  assert.equal(code(() => parseAmountUsd(5)), "invalid_request");
  assert.equal(code(() => parseAmountUsd("five")), "invalid_request");
  assert.equal(code(() => parseAmountUsd("-1.000000")), "invalid_request");
  assert.equal(code(() => parseAmountUsd("1e3")), "invalid_request");
  assert.equal(code(() => parseAmountUsd("5.001000")), "amount_not_cent_increment");
  assert.equal(code(() => parseAmountUsd("5.000001")), "amount_not_cent_increment");
  assert.equal(code(() => parseAmountUsd("5.0000000001")), "amount_not_cent_increment");
});

Deno.test("formatUsd() writes the six-decimal wire form", () => {
  assert.equal(formatUsd(0), "0.000000");
  assert.equal(formatUsd(500_000), "0.500000");
  assert.equal(formatUsd(123_450_000), "123.450000");
});

Deno.test("checkAmount() applies plan limits, and the card floor to card rails only", () => {
  const limits = { minimumMicros: 100_000, maximumMicros: 50_000_000, cardMinimumMicros: 500_000 };
  assert.equal(code(() => checkAmount(90_000, limits, "any")), "amount_below_minimum");
  assert.equal(code(() => checkAmount(50_010_000, limits, "any")), "amount_above_maximum");
  assert.equal(code(() => checkAmount(200_000, limits, "card")), "amount_below_card_minimum");
  assert.equal(code(() => checkAmount(200_000, limits, "wallet")), "no error");
  assert.equal(code(() => checkAmount(500_000, limits, "card")), "no error");
});
