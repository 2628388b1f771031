/**
 * The shape of an admin subcommand and what it runs against. Kept apart from the command table
 * (commands.ts), which imports each room's commands, so those rooms can use these types without
 * importing the table back.
 */
import type { ApiKeyService, OperatorKeys } from "../core/auth/mod.ts";
import type { Clock } from "../core/clock.ts";
import type { Commerce } from "../core/commerce/mod.ts";
import type { SafeFetcher } from "../core/net/mod.ts";
import type { PayproxyServices } from "../core/payproxy/mod.ts";
import type { ArticleService } from "../core/search/mod.ts";
import type { SignedLinks } from "../core/links/mod.ts";
import type { SourceService } from "../core/sources/mod.ts";
import type { Repos } from "../core/store/mod.ts";
import type { Storefront } from "../core/identity/mod.ts";

/** The services admin commands use (the app's deps have them all). */
export interface AdminDeps {
  readonly clock: Clock;
  readonly repos: Repos;
  readonly apiKeys: ApiKeyService;
  readonly operatorKeys: OperatorKeys;
  readonly safeFetch: SafeFetcher;
  readonly search: ArticleService;
  readonly payproxy: PayproxyServices;
  readonly links: SignedLinks;
  readonly commerce: Commerce;
  readonly storefront: Storefront;
  readonly sources: SourceService;
}

/** An admin subcommand: `<entity> <verb>` with `--flags`; returns what to print as JSON. */
export interface AdminCommand {
  usage: string;
  options: Record<string, { type: "string" | "boolean"; multiple?: boolean }>;
  run(deps: AdminDeps, values: Record<string, string | boolean | string[] | undefined>): Promise<unknown>;
}

/** A usage mistake in an admin command: printed as one line, exit code 2. */
export class AdminUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AdminUsageError";
  }
}
