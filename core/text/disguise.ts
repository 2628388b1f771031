/**
 * Characters that make a short label read as something else: bidi embeddings, overrides and
 * isolates (U+202E shows `Bank\u202Etxe.exe` as `Bankexe.txt`), invisible separators that split a
 * word to dodge a filter or fake a duplicate (U+200B, U+2060, U+FEFF) and control characters.
 * Zero-width joiners (emoji, Indic and Persian script) and the LRM/RLM marks are kept: real text needs them.
 */
// deno-lint-ignore no-control-regex -- control characters are what this removes
const DISGUISING = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200b\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;

/**
 * A title, author, site name, category or summary without {@link DISGUISING} characters, so
 * agents and readers see the text that is stored and compared.
 * @example withoutDisguise("Bank\u202Etxe.exe") // "Banktxe.exe"
 */
export function withoutDisguise(text: string): string {
  return text.replace(DISGUISING, "");
}
