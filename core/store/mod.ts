/** The store room's face: what other rooms and the routes may use. */

export type { EntityRepo } from "./entity_repo.ts";
export { retryBusyKv, retryWrite } from "./kv_busy_retry.ts";
export { DATA_MODEL_LICENSES, domainSchema, slugSchema } from "./models.ts";
export type { AiModel, Campaign, DataModel, Prompt, ProviderSettings, Widget } from "./models.ts";
export { createRepos } from "./repos.ts";
export type { Repos } from "./repos.ts";
