import type { AnalyticsDb } from "../analytics/duckdb.ts";
import type { EventSink } from "../analytics/events.ts";
import type { AnswerService } from "./answer/types.ts";
import type { SearchService } from "./search/types.ts";
import { ApiKeyService } from "./auth/api_keys.ts";
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import type { Logger } from "./log.ts";
import { createRepos, type Repos } from "./store/repos.ts";
import type { Mailer } from "./storefront/mailer.ts";
import { createMailer, createStorefront, type Storefront } from "./storefront/service.ts";

/**
 * Everything the app is built from. `main.ts` makes the real one; tests make one with `:memory:`
 * KV, a temp data dir, a fixed clock and local peers (tests/_helpers.ts).
 */
export interface Deps {
  config: Config;
  kv: Deno.Kv;
  clock: Clock;
  log: Logger;
  repos: Repos;
  apiKeys: ApiKeyService;
  duckdb: AnalyticsDb;
  /** Outbound HTTP; injected so tests can point it at local peers. */
  fetch: typeof fetch;
  /** Article search (issue 3). Optional until that room is built. */
  search?: SearchService;
  /** Real-time answers (issue 4). */
  answer?: AnswerService;
  /** Analytics event sink (issue 6). */
  events?: EventSink;
  /** Outgoing e-mail: SMTP (SMTP_URL) or the KV outbox. */
  mailer: Mailer;
  /** Agent storefront: sellers, identities, claims, tokens (issue 7). */
  storefront: Storefront;
}

/** The parts of {@link Deps} that are opened (stores) or chosen (clock, log, fetch) by the caller. */
export interface DepsInputs {
  config: Config;
  kv: Deno.Kv;
  duckdb: AnalyticsDb;
  clock: Clock;
  log: Logger;
  fetch?: typeof fetch;
  /** Overrides the mailer chosen from the config. */
  mailer?: Mailer;
}

/** Wires the services over already-open stores. Pure: no I/O, no environment, no wall clock. */
export function assembleDeps(inputs: DepsInputs): Deps {
  const fetch = inputs.fetch ?? globalThis.fetch;
  const mailer = inputs.mailer ?? createMailer(inputs.config, inputs.kv, inputs.clock);
  return {
    ...inputs,
    repos: createRepos(inputs.kv),
    apiKeys: new ApiKeyService(inputs.kv, inputs.clock),
    fetch,
    mailer,
    storefront: createStorefront({ ...inputs, fetch, mailer }),
  };
}
