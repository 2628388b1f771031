/** The answer room's face: what other rooms and the routes may use. */

export { askingWidget, isHttpUrl } from "./asker.ts";
export { conversationFields, ConversationStore, MAX_TURN_CHARS, turnFields } from "./conversation.ts";
export type { ConversationRequest } from "./conversation.ts";
export { ExtractiveProvider } from "./extractive.ts";
export { standaloneQuery } from "./followup.ts";
export { OpenAiProvider } from "./openai.ts";
export { followUpQuestions, followUpsFor } from "./related.ts";
export { createAnswerService } from "./service.ts";
export type { AnswerContext, AnswerService, Citation, CitedArticles } from "./types.ts";
