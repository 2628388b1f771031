import { commerceErrors as errors } from "./errors.ts";

/** One US dollar in micro-USD, the integer unit every amount is kept in. */
export const MICROS_PER_USD = 1_000_000;
/** One cent in micro-USD. */
export const MICROS_PER_CENT = 10_000;
/** The card rail's floor (spec section 8): 0.50 USD. */
export const CARD_MINIMUM_MICROS = 500_000;

// Whole dollars (at most 9 digits: under a billion) and up to six decimals. Anything longer than six
// decimals is still read so it can be named as a non-cent amount rather than a malformed one.
const AMOUNT_RE = /^(\d{1,9})(?:\.(\d{1,12}))?$/;

/**
 * Parses an `amountUsd` field into integer micro-USD.
 * The wire form is a string with six decimals (`"5.000000"`); fewer decimals are accepted, but the
 * value must be a whole number of cents.
 * @throws {AppError} `amount_required` when absent, `invalid_request` when not a decimal string,
 *   `amount_not_cent_increment` when finer than a cent.
 */
export function parseAmountUsd(raw: unknown): number {
  if (raw === undefined || raw === null || raw === "") throw errors.amount_required();
  if (typeof raw !== "string") throw errors.amount_not_string();
  const m = AMOUNT_RE.exec(raw);
  if (!m) throw errors.amount_malformed();
  const frac = m[2] ?? "";
  if (/[1-9]/.test(frac.slice(2))) throw errors.amount_not_cent_increment();
  return Number(m[1]) * MICROS_PER_USD + Number(frac.slice(0, 2).padEnd(2, "0")) * MICROS_PER_CENT;
}

/** Formats micro-USD in the six-decimal wire form, e.g. `5000000` -> `"5.000000"`. */
export function formatUsd(micros: number): string {
  if (!Number.isSafeInteger(micros) || micros < 0) throw new RangeError(`not a money amount: ${micros}`);
  return `${Math.floor(micros / MICROS_PER_USD)}.${String(micros % MICROS_PER_USD).padStart(6, "0")}`;
}

// Made on first use: building an ICU currency formatter costs about 12 ms, which every process
// that imports the app (each test file among them) would pay whether it shows a price or not.
let displayFormat: Intl.NumberFormat | undefined;

/**
 * An amount as a person reads it: `$2.00`, `$1,250.50`, and sub-cent prices in full (`$0.015`).
 * @example displayUsd(2_000_000) === "$2.00"
 */
export function displayUsd(micros: number): string {
  if (!Number.isSafeInteger(micros) || micros < 0) throw new RangeError(`not a money amount: ${micros}`);
  displayFormat ??= new Intl.NumberFormat("en-US", {
    style: "currency",
    currency: "USD",
    minimumFractionDigits: 2,
    maximumFractionDigits: 6,
  });
  return displayFormat.format(micros / MICROS_PER_USD);
}

/** Limits a credit purchase is checked against (micro-USD). */
export interface PurchaseLimits {
  minimumMicros: number;
  maximumMicros: number;
  cardMinimumMicros: number;
}

/**
 * Checks an amount against a plan's limits for a rail. Wallet rails are exempt from the card floor.
 * @throws {AppError} `amount_below_minimum`, `amount_above_maximum`, `amount_below_card_minimum`.
 */
export function checkAmount(micros: number, limits: PurchaseLimits, rail: "card" | "wallet" | "any"): void {
  if (micros < limits.minimumMicros) throw errors.amount_below_minimum({ minimumUsd: formatUsd(limits.minimumMicros) });
  if (micros > limits.maximumMicros) throw errors.amount_above_maximum({ maximumUsd: formatUsd(limits.maximumMicros) });
  if (rail === "card" && micros < limits.cardMinimumMicros) {
    throw errors.amount_below_card_minimum({ cardMinimumUsd: formatUsd(limits.cardMinimumMicros) });
  }
}
