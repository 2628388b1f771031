import type { Clock } from "../core/clock.ts";

const hex = (b: number) => b.toString(16).padStart(2, "0");

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds from `clock`, then random bits, so ids sort
 * by creation time. Used for event ids, WAL batches and Parquet file names.
 */
export function uuidv7(clock: Clock): string {
  const ms = clock.now().getTime();
  const b = crypto.getRandomValues(new Uint8Array(16));
  // 48-bit big-endian timestamp; Math.floor keeps the division exact for the high bytes.
  let t = ms;
  for (let i = 5; i >= 0; i--) {
    b[i] = t % 256;
    t = Math.floor(t / 256);
  }
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = Array.from(b, hex).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Whether `value` is a lowercase hyphenated UUIDv7. */
export function isUuidv7(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(value);
}
