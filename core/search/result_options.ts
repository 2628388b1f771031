/**
 * What a search result carries beyond spec 2.2 when asked: query-relevant `highlights` within a
 * character budget, and the article's licensed full `text` (`contents`). Absent options leave
 * the response exactly as before.
 */
import { z } from "zod";
import {
  DEFAULT_HIGHLIGHT_CHARACTERS,
  DEFAULT_HIGHLIGHTS_PER_RESULT,
  type HighlightOptions,
  MAX_HIGHLIGHT_CHARACTERS,
  MAX_HIGHLIGHTS_PER_RESULT,
  SUMMARY_LICENCE_HIGHLIGHT_CHARACTERS,
} from "./rank/highlights.ts";

const int = (min: number, max: number) =>
  z.number({ error: "must be a number" }).int({ error: "must be a whole number" }).min(min, {
    error: `must be at least ${min}`,
  }).max(max, { error: `must be at most ${max}` });

/** Most characters of a result's full text. */
export const MAX_TEXT_CHARACTERS = 20_000;

/** The full-text option of a SearchRequest. */
export const contentsField = z.object({
  text: z.boolean({ error: "must be true or false" }).describe(
    "Adds `text`: the article body as clean Markdown (headings, lists and links kept), where licensed",
  ),
  max_characters: int(1, MAX_TEXT_CHARACTERS).optional().describe(
    `Most characters of each text (default and at most ${MAX_TEXT_CHARACTERS}); cut at a block, sentence or word end`,
  ),
}, { error: "must be an object" });

/** The result option fields of a SearchRequest (spread into its schema). */
export const resultOptionFields = {
  highlights: z.object({
    max_characters: int(1, MAX_HIGHLIGHT_CHARACTERS).optional().describe(
      `Most characters of a result's highlights together (default ${DEFAULT_HIGHLIGHT_CHARACTERS}); never cut inside a word`,
    ),
    per_result: int(1, MAX_HIGHLIGHTS_PER_RESULT).optional().describe(
      `Most highlights per result (default ${DEFAULT_HIGHLIGHTS_PER_RESULT})`,
    ),
  }, { error: "must be an object" }).optional().describe(
    "Adds `highlights` to every result: the passages of its body that best answer the query, in document order",
  ),
  contents: contentsField.optional().describe(
    "`{text: true}` adds each article's full text as Markdown; needs a data model licensed for full text " +
      "(or the owning tenant's key); on the storefront it is the `full_text` meter",
  ),
};

/** The result option fields as a request carries them (already shape-checked by the schema). */
export interface ResultOptionFields {
  highlights?: { max_characters?: number; per_result?: number };
  contents?: { text: boolean; max_characters?: number };
}

/** The full-text budget of a request (characters per text), or null when it asks for no text. */
export function textOptionOf(request: ResultOptionFields): number | null {
  return request.contents?.text ? request.contents.max_characters ?? MAX_TEXT_CHARACTERS : null;
}

/**
 * The highlight budget of a request, or null when it asks for none.
 * @param fullTextLicensed whether the caller may read the full text; without it the budget is at
 * most {@link SUMMARY_LICENCE_HIGHLIGHT_CHARACTERS}, else a large budget in one passage is the body
 */
export function highlightOptionsOf(request: ResultOptionFields, fullTextLicensed = true): HighlightOptions | null {
  if (!request.highlights) return null;
  const asked = request.highlights.max_characters ?? DEFAULT_HIGHLIGHT_CHARACTERS;
  return {
    maxCharacters: fullTextLicensed ? asked : Math.min(asked, SUMMARY_LICENCE_HIGHLIGHT_CHARACTERS),
    perResult: request.highlights.per_result ?? DEFAULT_HIGHLIGHTS_PER_RESULT,
  };
}
