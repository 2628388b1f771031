/** Wires the answer engine over the app's deps: retrieval from `deps.search`, both providers. */
import type { Deps } from "../deps.ts";
import { AppError } from "../errors.ts";
import { ExtractiveProvider } from "./extractive.ts";
import { OpenAiProvider } from "./openai.ts";
import { createAnswerService } from "./service.ts";
import type { AnswerService } from "./types.ts";

/**
 * The answer engine of `deps`. Search and the event sink are looked up at call time, so the
 * order in which rooms are wired into the deps does not matter.
 */
export function answerServiceFor(deps: Deps): AnswerService {
  return createAnswerService({
    retrieve: (dataModelIds, query, options) => {
      if (!deps.search) {
        return Promise.reject(new AppError(503, "search_unavailable", "Article search is not available"));
      }
      return deps.search.retrieve(dataModelIds, query, options);
    },
    providers: {
      extractive: new ExtractiveProvider(),
      openai: new OpenAiProvider({ config: deps.config.openai, fetch: deps.fetch, log: deps.log, clock: deps.clock }),
    },
    clock: deps.clock,
    log: deps.log,
    events: () => deps.events,
  });
}
