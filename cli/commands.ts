import { parseArgs } from "node:util";
import { z } from "zod";
import { commerceAdminCommands } from "./commerce.ts";
import { type AdminCommand, type AdminDeps, AdminUsageError } from "./command.ts";
import { newId } from "../core/ids.ts";
import { SafeFetcher } from "../core/net/mod.ts";
import { feedReader, MAX_RETENTION_DAYS, SourceFormatError, sourceInputSchema } from "../core/sources/mod.ts";
import { SecretStoreError } from "../core/payproxy/mod.ts";
import { DATA_MODEL_LICENSES, domainSchema, slugSchema } from "../core/store/mod.ts";
import type { AiModel, Campaign, DataModel, Prompt, Widget } from "../core/store/mod.ts";
import { storefrontAdminCommands } from "./identity.ts";
import { widgetAdminCommands } from "./widget.ts";
import { allowedOriginsSchema } from "../core/widget/mod.ts";
import { AppError } from "../core/errors.ts";

export { type AdminCommand, type AdminDeps, AdminUsageError } from "./command.ts";

const need = (values: Record<string, unknown>, name: string): string => {
  const v = values[name];
  if (typeof v !== "string" || v === "") throw new AdminUsageError(`--${name} is required`);
  return v;
};
const list = (v: unknown): string[] =>
  (Array.isArray(v) ? v : typeof v === "string" ? [v] : []).flatMap((s) => String(s).split(",")).map((s) => s.trim())
    .filter(Boolean);
const check = <T>(schema: z.ZodType<T>, value: unknown, flag: string): T => {
  const r = schema.safeParse(value);
  if (!r.success) throw new AdminUsageError(`--${flag} ${r.error.issues[0]!.message}`);
  return r.data;
};

/** Runs a secret-store call, turning its rule errors into usage errors (one line, exit code 2). */
async function secretCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof SecretStoreError) throw new AdminUsageError(err.message);
    throw err;
  }
}

async function requireTenant(deps: AdminDeps, tenantId: string): Promise<void> {
  if (!(await deps.repos.tenants.get(tenantId))) throw new AdminUsageError(`tenant not found: ${tenantId}`);
}

async function requireDataModel(deps: AdminDeps, id: string): Promise<DataModel> {
  const dm = await deps.repos.dataModels.get(id);
  if (!dm) throw new AdminUsageError(`data model not found: ${id}`);
  return dm;
}

/** Runs a service call, turning its 4xx refusals into usage errors (one line, exit code 2). */
async function usageErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError && !err.serverSide) throw new AdminUsageError(err.message);
    throw err;
  }
}

/** Every admin command by name (`"<entity> <verb>"`). Feature modules add theirs here. */
export const adminCommands: Record<string, AdminCommand> = {
  "tenant create": {
    usage: "tenant create --name <name>",
    options: { name: { type: "string" } },
    async run(deps, v) {
      const tenant = { id: newId("tn", deps.clock), name: need(v, "name"), createdAt: deps.clock.now().toISOString() };
      return await deps.repos.tenants.create(tenant);
    },
  },
  "tenant list": {
    usage: "tenant list",
    options: {},
    run: (deps) => deps.repos.tenants.list(),
  },
  "key create": {
    usage: "key create --tenant <tn_...> [--name <label>]",
    options: { tenant: { type: "string" }, name: { type: "string" } },
    async run(deps, v) {
      const tenantId = need(v, "tenant");
      await requireTenant(deps, tenantId);
      const { key, record } = await deps.apiKeys.create(tenantId, typeof v.name === "string" ? v.name : "default");
      return { id: record.id, tenantId, name: record.name, key, note: "Store this key now: it is not shown again" };
    },
  },
  "key list": {
    usage: "key list --tenant <tn_...>",
    options: { tenant: { type: "string" } },
    run: (deps, v) => deps.apiKeys.list(need(v, "tenant")),
  },
  "key revoke": {
    usage: "key revoke --id <key_...>",
    options: { id: { type: "string" } },
    async run(deps, v) {
      const id = need(v, "id");
      if (!(await deps.apiKeys.revoke(id))) throw new AdminUsageError(`api key not found: ${id}`);
      return { id, revoked: true };
    },
  },
  "operator-key create": {
    usage: "operator-key create [--name <label>]",
    options: { name: { type: "string" } },
    async run(deps, v) {
      const { key, record } = await deps.operatorKeys.create(typeof v.name === "string" ? v.name : "operator");
      return { id: record.id, name: record.name, key, note: "Store this key now: it is not shown again" };
    },
  },
  "operator-key list": {
    usage: "operator-key list",
    options: {},
    run: (deps) => deps.operatorKeys.list(),
  },
  "operator-key revoke": {
    usage: "operator-key revoke --id <opk_...>",
    options: { id: { type: "string" } },
    async run(deps, v) {
      const id = need(v, "id");
      if (!(await deps.operatorKeys.revoke(id))) throw new AdminUsageError(`operator key not found: ${id}`);
      return { id, revoked: true };
    },
  },
  "data-model create": {
    usage:
      "data-model create --tenant <tn_...> --name <name> [--tool-name <slug>] --site <domain=Site Name>... [--marketplace]",
    options: {
      tenant: { type: "string" },
      name: { type: "string" },
      "tool-name": { type: "string" },
      site: { type: "string", multiple: true },
      marketplace: { type: "boolean" },
    },
    async run(deps, v) {
      const tenantId = need(v, "tenant");
      await requireTenant(deps, tenantId);
      const sites = (Array.isArray(v.site) ? v.site : []).map((s) => {
        const [domain, ...name] = String(s).split("=");
        const d = check(domainSchema, domain, "site");
        return { domain: d, name: name.join("=") || d };
      });
      const dm: DataModel = {
        id: newId("dm", deps.clock),
        tenantId,
        name: need(v, "name"),
        toolName: typeof v["tool-name"] === "string" ? check(slugSchema, v["tool-name"], "tool-name") : undefined,
        sites,
        marketplace: v.marketplace === true,
        createdAt: deps.clock.now().toISOString(),
      };
      return await deps.repos.dataModels.create(dm);
    },
  },
  "data-model list": {
    usage: "data-model list --tenant <tn_...>",
    options: { tenant: { type: "string" } },
    run: (deps, v) => deps.repos.dataModels.listByTenant(need(v, "tenant")),
  },
  "ai-model create": {
    usage:
      "ai-model create --tenant <tn_...> --name <name> --grounding <dm_...,...> [--tool-name <slug>] [--provider extractive|openai] [--model <name>] [--base-url <url>] [--schema-file <json schema>] [--private] [--marketplace]",
    options: {
      tenant: { type: "string" },
      name: { type: "string" },
      grounding: { type: "string", multiple: true },
      "tool-name": { type: "string" },
      provider: { type: "string" },
      model: { type: "string" },
      "base-url": { type: "string" },
      "schema-file": { type: "string" },
      private: { type: "boolean" },
      marketplace: { type: "boolean" },
    },
    async run(deps, v) {
      const tenantId = need(v, "tenant");
      await requireTenant(deps, tenantId);
      const grounding = list(v.grounding);
      for (const dm of grounding) {
        if (!(await deps.repos.dataModels.getForTenant(tenantId, dm))) {
          throw new AdminUsageError(`data model not found in tenant: ${dm}`);
        }
      }
      const providerKind = check(z.enum(["extractive", "openai"]), v.provider ?? "extractive", "provider");
      const provider: AiModel["provider"] = providerKind === "openai"
        ? {
          kind: "openai",
          model: need(v, "model"),
          baseUrl: typeof v["base-url"] === "string" ? check(z.url(), v["base-url"], "base-url") : undefined,
        }
        : { kind: "extractive" };
      let output: AiModel["output"] = { kind: "text" };
      if (typeof v["schema-file"] === "string") {
        const schema = JSON.parse(await Deno.readTextFile(v["schema-file"]));
        if (!schema || typeof schema !== "object" || Array.isArray(schema)) {
          throw new AdminUsageError("--schema-file must hold a JSON schema object");
        }
        output = { kind: "structured", schema };
      }
      const model: AiModel = {
        id: newId("am", deps.clock),
        tenantId,
        name: need(v, "name"),
        toolName: typeof v["tool-name"] === "string" ? check(slugSchema, v["tool-name"], "tool-name") : undefined,
        groundingDataModelIds: grounding,
        provider,
        output,
        private: v.private === true,
        marketplace: v.marketplace === true,
        createdAt: deps.clock.now().toISOString(),
      };
      return await deps.repos.aiModels.create(model);
    },
  },
  "ai-model list": {
    usage: "ai-model list --tenant <tn_...>",
    options: { tenant: { type: "string" } },
    run: (deps, v) => deps.repos.aiModels.listByTenant(need(v, "tenant")),
  },
  "widget create": {
    usage:
      "widget create --tenant <tn_...> --name <name> --ai-model <am_...> [--origin <https://site>]... [--deployment-type embed]",
    options: {
      tenant: { type: "string" },
      name: { type: "string" },
      "ai-model": { type: "string" },
      origin: { type: "string", multiple: true },
      "deployment-type": { type: "string" },
    },
    async run(deps, v) {
      const tenantId = need(v, "tenant");
      await requireTenant(deps, tenantId);
      const aiModelId = need(v, "ai-model");
      if (!(await deps.repos.aiModels.getForTenant(tenantId, aiModelId))) {
        throw new AdminUsageError(`ai model not found in tenant: ${aiModelId}`);
      }
      // The API's rule (http(s) only): a bare `localhost:8001` is a URL whose origin is "null".
      const origins = [...new Set(check(allowedOriginsSchema, list(v.origin), "origin"))];
      const widget: Widget = {
        id: newId("wd", deps.clock),
        tenantId,
        name: need(v, "name"),
        aiModelId,
        allowedOrigins: origins,
        deploymentType: typeof v["deployment-type"] === "string"
          ? check(slugSchema, v["deployment-type"], "deployment-type")
          : "embed",
        createdAt: deps.clock.now().toISOString(),
      };
      return await deps.repos.widgets.create(widget);
    },
  },
  "widget list": {
    usage: "widget list --tenant <tn_...>",
    options: { tenant: { type: "string" } },
    run: (deps, v) => deps.repos.widgets.listByTenant(need(v, "tenant")),
  },
  "campaign create": {
    usage: "campaign create --tenant <tn_...> --name <name> --creative <id>... [--ai-model <am_...>]",
    options: {
      tenant: { type: "string" },
      name: { type: "string" },
      creative: { type: "string", multiple: true },
      "ai-model": { type: "string" },
    },
    async run(deps, v) {
      const tenantId = need(v, "tenant");
      await requireTenant(deps, tenantId);
      const aiModelId = typeof v["ai-model"] === "string" ? v["ai-model"] : undefined;
      if (aiModelId && !(await deps.repos.aiModels.getForTenant(tenantId, aiModelId))) {
        throw new AdminUsageError(`ai model not found in tenant: ${aiModelId}`);
      }
      const campaign: Campaign = {
        id: newId("cp", deps.clock),
        tenantId,
        name: need(v, "name"),
        creativeIds: list(v.creative),
        aiModelId,
        createdAt: deps.clock.now().toISOString(),
      };
      return await deps.repos.campaigns.create(campaign);
    },
  },
  "campaign list": {
    usage: "campaign list --tenant <tn_...>",
    options: { tenant: { type: "string" } },
    run: (deps, v) => deps.repos.campaigns.listByTenant(need(v, "tenant")),
  },
  "prompt create": {
    usage: "prompt create --tenant <tn_...> --text <prompt text> [--campaign <cp_...>]",
    options: { tenant: { type: "string" }, text: { type: "string" }, campaign: { type: "string" } },
    async run(deps, v) {
      const tenantId = need(v, "tenant");
      await requireTenant(deps, tenantId);
      const campaignId = typeof v.campaign === "string" ? v.campaign : undefined;
      if (campaignId && !(await deps.repos.campaigns.getForTenant(tenantId, campaignId))) {
        throw new AdminUsageError(`campaign not found in tenant: ${campaignId}`);
      }
      const prompt: Prompt = {
        id: newId("pm", deps.clock),
        tenantId,
        campaignId,
        text: need(v, "text"),
        createdAt: deps.clock.now().toISOString(),
      };
      return await deps.repos.prompts.create(prompt);
    },
  },
  "articles import": {
    usage:
      "articles import --data-model <dm_...> (--file <path> | --url <http(s) url>) [--format auto|jsonl|feed] [--allow-private]",
    options: {
      "data-model": { type: "string" },
      file: { type: "string" },
      url: { type: "string" },
      format: { type: "string" },
      "allow-private": { type: "boolean" },
    },
    async run(deps, v) {
      const dmId = need(v, "data-model");
      const dm = await deps.repos.dataModels.get(dmId);
      if (!dm) throw new AdminUsageError(`data model not found: ${dmId}`);
      const format = check(z.enum(["auto", "jsonl", "feed"]), v.format ?? "auto", "format");
      const file = typeof v.file === "string" ? v.file : undefined;
      const url = typeof v.url === "string" ? v.url : undefined;
      if (!file === !url) throw new AdminUsageError("give exactly one of --file or --url");
      const { parseSource, SOURCE_TYPES } = await feedReader();
      let text: string;
      try {
        if (file) text = await Deno.readTextFile(file);
        else {
          // The operator may import from a private address on purpose; user URLs never can.
          const fetcher = v["allow-private"] === true ? new SafeFetcher({ allowPrivate: true }) : deps.safeFetch;
          const res = await fetcher.fetch(url!, {
            accept: SOURCE_TYPES,
            timeoutMs: 15_000,
            maxBytes: 32 * 1024 * 1024,
          });
          text = new TextDecoder(res.charset ?? "utf-8").decode(res.body);
        }
      } catch (err) {
        throw new AdminUsageError(`cannot read ${file ?? url}: ${(err as Error).message}`);
      }
      let parsed;
      try {
        parsed = parseSource(text, format);
      } catch (err) {
        // The markup guard's refusals (nesting, entities, entry count) are written to be shown.
        if (err instanceof SourceFormatError) throw new AdminUsageError(`cannot import ${file ?? url}: ${err.message}`);
        throw err;
      }
      let created = 0, updated = 0, failed = parsed.errors.length;
      const errors: { at: string; error: string }[] = parsed.errors.map((e) => ({
        at: `entry ${e.at}`,
        error: e.error,
      }));
      for (let i = 0; i < parsed.items.length; i += 1000) {
        const report = await deps.search.ingest(dm, parsed.items.slice(i, i + 1000));
        created += report.created;
        updated += report.updated;
        failed += report.failed;
        for (const r of report.results) {
          if (r.status === "error") errors.push({ at: `item ${i + r.index + 1}`, error: r.error ?? "invalid" });
        }
      }
      return { dataModelId: dmId, read: parsed.items.length, created, updated, failed, errors: errors.slice(0, 50) };
    },
  },
  "articles count": {
    usage: "articles count --data-model <dm_...>",
    options: { "data-model": { type: "string" } },
    async run(deps, v) {
      const dmId = need(v, "data-model");
      // What the service serves: articles past the retention are out before the sweep deletes them.
      return { dataModelId: dmId, articles: await deps.search.countServed(dmId) };
    },
  },
  "source add": {
    usage:
      "source add --data-model <dm_...> --type rss|atom|jsonfeed|sitemap --url <http(s) url> --interval <seconds> [--fetch-pages]",
    options: {
      "data-model": { type: "string" },
      type: { type: "string" },
      url: { type: "string" },
      interval: { type: "string" },
      "fetch-pages": { type: "boolean" },
    },
    async run(deps, v) {
      const dm = await requireDataModel(deps, need(v, "data-model"));
      const interval = Number(need(v, "interval"));
      const parsed = sourceInputSchema(deps.sources.limits).safeParse({
        type: need(v, "type"),
        url: need(v, "url"),
        interval_s: interval,
        ...(v["fetch-pages"] === true ? { fetch_pages: true } : {}),
      });
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        const flag = issue.path[0] === "interval_s" ? "interval" : String(issue.path[0] ?? "url");
        throw new AdminUsageError(`--${flag} ${issue.message}`);
      }
      const input = parsed.data;
      return await usageErrors(() => deps.sources.add(dm, input));
    },
  },
  "source list": {
    usage: "source list --data-model <dm_...>",
    options: { "data-model": { type: "string" } },
    async run(deps, v) {
      return await deps.sources.list(await requireDataModel(deps, need(v, "data-model")));
    },
  },
  "source remove": {
    usage: "source remove --data-model <dm_...> --id <src_...>",
    options: { "data-model": { type: "string" }, id: { type: "string" } },
    async run(deps, v) {
      const dm = await requireDataModel(deps, need(v, "data-model"));
      const id = need(v, "id");
      await usageErrors(() => deps.sources.remove(dm, id));
      return { id, removed: true };
    },
  },
  "data-model retention": {
    usage: "data-model retention --data-model <dm_...> (--max-age-days <1..3650> | --keep-forever)",
    options: {
      "data-model": { type: "string" },
      "max-age-days": { type: "string" },
      "keep-forever": { type: "boolean" },
    },
    async run(deps, v) {
      const dm = await requireDataModel(deps, need(v, "data-model"));
      const days = v["keep-forever"] === true
        ? null
        : check(z.coerce.number().int().min(1).max(MAX_RETENTION_DAYS), need(v, "max-age-days"), "max-age-days");
      const updated = await deps.sources.setRetention(dm, days);
      return { dataModelId: dm.id, max_age_days: updated.maxAgeDays ?? null };
    },
  },
  "data-model license": {
    usage: "data-model license --data-model <dm_...> --license summary|full_text",
    options: { "data-model": { type: "string" }, license: { type: "string" } },
    async run(deps, v) {
      const dm = await requireDataModel(deps, need(v, "data-model"));
      const license = check(z.enum(DATA_MODEL_LICENSES), need(v, "license"), "license");
      const updated = await deps.repos.dataModels.change(dm.id, (current) => ({ ...current, license }));
      if (!updated) throw new AdminUsageError(`data model not found: ${dm.id}`);
      return { dataModelId: updated.id, license: updated.license ?? "summary" };
    },
  },
  "payproxy-secret create": {
    usage: "payproxy-secret create --seller <seller-id>",
    options: { seller: { type: "string" } },
    async run(deps, v) {
      const record = await secretCall(() => deps.payproxy.secrets.create(need(v, "seller")));
      return { ...record, note: "Give this secret to the payment layer now: it is not shown again" };
    },
  },
  "payproxy-secret rotate": {
    usage: "payproxy-secret rotate --seller <seller-id>",
    options: { seller: { type: "string" } },
    async run(deps, v) {
      const record = await secretCall(() => deps.payproxy.secrets.rotate(need(v, "seller")));
      return {
        ...record,
        note: "New current secret, shown once. The previous one still verifies until `payproxy-secret retire`",
      };
    },
  },
  "payproxy-secret retire": {
    usage: "payproxy-secret retire --seller <seller-id> [--kid <ppk_...>]",
    options: { seller: { type: "string" }, kid: { type: "string" } },
    run: (deps, v) =>
      secretCall(() =>
        deps.payproxy.secrets.retire(need(v, "seller"), typeof v.kid === "string" && v.kid ? v.kid : undefined)
      ),
  },
  "payproxy-secret list": {
    usage: "payproxy-secret list --seller <seller-id>",
    options: { seller: { type: "string" } },
    run: (deps, v) => deps.payproxy.secrets.list(need(v, "seller")),
  },
  "prompt list": {
    usage: "prompt list --tenant <tn_...>",
    options: { tenant: { type: "string" } },
    run: (deps, v) => deps.repos.prompts.listByTenant(need(v, "tenant")),
  },
  "link-key rotate": {
    usage: "link-key rotate",
    options: {},
    async run(deps) {
      const kid = await deps.links.keys.rotate();
      return { kid, note: "New links are signed with this key; links already issued keep working" };
    },
  },
  "link-key list": {
    usage: "link-key list",
    options: {},
    run: (deps) => deps.links.keys.list(),
  },
  ...commerceAdminCommands,
};

Object.assign(adminCommands, storefrontAdminCommands);
Object.assign(adminCommands, widgetAdminCommands);

/** Usage text listing every admin command. */
export function adminUsage(): string {
  return ["Usage: deno task admin <command> [options]", "", ...Object.values(adminCommands).map((c) => `  ${c.usage}`)]
    .join("\n");
}

/**
 * Runs an admin command from argv (e.g. `["key", "create", "--tenant", "tn_..."]`).
 * @throws {AdminUsageError} for unknown commands, unknown or missing flags, bad values.
 */
export async function runAdmin(deps: AdminDeps, argv: string[]): Promise<unknown> {
  if (argv.length === 0 || argv[0] === "help" || argv[0] === "--help") return adminUsage();
  const name = argv.slice(0, 2).join(" ");
  // Own entries only: `constructor` or `toString` would find what every object inherits.
  const command = Object.hasOwn(adminCommands, name) ? adminCommands[name] : undefined;
  if (!command) throw new AdminUsageError(`unknown admin command: ${name || "(none)"}\n${adminUsage()}`);
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    values = parseArgs({ args: argv.slice(2), options: command.options, strict: true, allowPositionals: false })
      .values as typeof values;
  } catch (err) {
    throw new AdminUsageError(`${(err as Error).message}\nusage: ${command.usage}`);
  }
  return await command.run(deps, values);
}
