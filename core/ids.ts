import type { Clock } from "./clock.ts";
import { randomBytes } from "./crypto.ts";

/** Prefixes of the public ids, one per resource kind. */
export const ID_PREFIXES = {
  tenant: "tn",
  dataModel: "dm",
  aiModel: "am",
  widget: "wd",
  campaign: "cp",
  prompt: "pm",
  apiKey: "key",
  article: "ar",
  agentCredential: "ag",
  humanAccount: "hu",
  claim: "cl",
  refreshFamily: "rf",
  plan: "pl",
  operatorKey: "opk",
  source: "src",
  conversation: "cv",
} as const;

export type IdPrefix = (typeof ID_PREFIXES)[keyof typeof ID_PREFIXES];

// Crockford base32, lowercase: no i, l, o, u, so ids read aloud and copy cleanly.
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const TIME_CHARS = 10; // 50 bits: milliseconds until the year 10889
const RANDOM_CHARS = 16; // 80 bits of randomness: unguessable
const BODY_RE = new RegExp(`^[${ALPHABET}]{${TIME_CHARS + RANDOM_CHARS}}$`);

/**
 * A new id `<prefix>_<26 chars>`: 10 characters of creation time then 16 random characters,
 * so ids sort by creation time and cannot be guessed.
 * @example newId("dm", clock) // "dm_01jd3k6q8s4m0v2x9c7b5n1r3t"
 */
export function newId(prefix: IdPrefix, clock: Clock): string {
  let ms = clock.now().getTime();
  let time = "";
  for (let i = 0; i < TIME_CHARS; i++) {
    time = ALPHABET[ms % 32] + time;
    ms = Math.floor(ms / 32);
  }
  const bytes = randomBytes(RANDOM_CHARS);
  let rand = "";
  for (const b of bytes) rand += ALPHABET[b & 31];
  return `${prefix}_${time}${rand}`;
}

/** Whether `value` is a well-formed id with the given prefix. */
export function isId(prefix: IdPrefix, value: string): boolean {
  const head = `${prefix}_`;
  return value.startsWith(head) && BODY_RE.test(value.slice(head.length));
}

/** The creation time encoded in an id made by {@link newId}. */
export function idTime(id: string): Date {
  const body = id.slice(id.indexOf("_") + 1, id.indexOf("_") + 1 + TIME_CHARS);
  let ms = 0;
  for (const ch of body) ms = ms * 32 + ALPHABET.indexOf(ch);
  return new Date(ms);
}

/** Most characters an id may have after its prefix: newId() makes 26; hand-made fixture ids are shorter. */
export const MAX_ID_BODY_CHARS = 64;
const FORMAT_BODY_RE = new RegExp(`^[A-Za-z0-9]{1,${MAX_ID_BODY_CHARS}}$`);

/**
 * Whether `value` has the format every public id of this kind has: the prefix, `_`, then 1 to
 * {@link MAX_ID_BODY_CHARS} letters or digits. Checked at the edge before any lookup, so a malformed
 * or huge id never reaches a store (a 60,000-character one made KV fail "Key too large").
 * Looser than {@link isId}: fixture and demo ids (`dm_news`) are not newId() ids.
 * @example hasIdFormat("dm", "dm_news") // true
 */
export function hasIdFormat(prefix: IdPrefix, value: unknown): value is string {
  return typeof value === "string" && value.startsWith(`${prefix}_`) &&
    FORMAT_BODY_RE.test(value.slice(prefix.length + 1));
}

/** The message a malformed id gets at the edge: it names the field and the format, never the value. */
export function idFormatMessage(field: string, prefix: IdPrefix): string {
  return `${field} must be ${prefix}_ followed by 1 to ${MAX_ID_BODY_CHARS} letters and digits`;
}

/** {@link hasIdFormat} as a pattern, for zod schemas (it shows in the OpenAPI document). */
export function idPattern(prefix: IdPrefix): RegExp {
  return new RegExp(`^${prefix}_[A-Za-z0-9]{1,${MAX_ID_BODY_CHARS}}$`);
}
