/** The text room's face: what other rooms and the routes may use. */

// The DOM walk only: `htmlToMarkdown` (./markdown.ts) loads linkedom, so it is imported where it is used.

export { withoutDisguise } from "./disguise.ts";
export { bodyToMarkdown } from "./markdown_dom.ts";
export { clipMarkdown, markupWithinLimits, safeMarkdown, stripTags, textToMarkdown } from "./markdown_text.ts";
export { splitSentences } from "./sentences.ts";
export { isQuestionStopword, QUESTION_WORDS, STOPWORDS } from "./stopwords.ts";
