import { randomBytes } from "../crypto.ts";

/** RFC 8628 section 6.1 base-20 alphabet: no vowels (no words), no look-alike characters. */
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const LENGTH = 8;

/** A new 8-character user code (about 34.6 bits), drawn without modulo bias. */
export function newUserCode(): string {
  let out = "";
  while (out.length < LENGTH) {
    for (const b of randomBytes(16)) {
      // 240 = 12 * 20: values at or above it would favour the first letters.
      if (b < 240 && out.length < LENGTH) out += USER_CODE_ALPHABET[b % 20];
    }
  }
  return out;
}

/** `BCDFGHJK` -> `BCDF-GHJK`, the form shown to the human. */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * The canonical form of what a human typed: case-insensitive, the dash (and spaces) optional.
 * @returns the 8 letters, or null when it cannot be a user code.
 */
export function normalizeUserCode(input: string): string | null {
  const code = input.toUpperCase().replace(/[\s-]/g, "");
  if (code.length !== LENGTH) return null;
  for (const ch of code) if (!USER_CODE_ALPHABET.includes(ch)) return null;
  return code;
}
