/** The text room's face: what other rooms and the routes may use. */

export { htmlToMarkdown } from "./markdown.ts";
export { clipMarkdown, markupWithinLimits, stripTags, textToMarkdown } from "./markdown_text.ts";
export { splitSentences } from "./sentences.ts";
export { isQuestionStopword, QUESTION_WORDS, STOPWORDS } from "./stopwords.ts";
