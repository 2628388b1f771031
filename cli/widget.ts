/**
 * Widget admin commands (`deno task admin widget configure|show`, `tenant white-label`,
 * `campaign active`): the CLI
 * twin of `PATCH /v1/widgets/{id}`, through the same checks (core/widget/settings.ts). Merged
 * into `adminCommands`.
 */
import { type AdminCommand, AdminUsageError } from "./command.ts";
import { AppError } from "../core/errors.ts";
import { applyWidgetSettings, type WidgetSettingsInput, widgetSettingsSchema } from "../core/widget/mod.ts";

type Values = Record<string, string | boolean | string[] | undefined>;

const need = (values: Values, name: string): string => {
  const v = values[name];
  if (typeof v !== "string" || v === "") throw new AdminUsageError(`--${name} is required`);
  return v;
};
const many = (v: unknown): string[] | undefined =>
  v === undefined ? undefined : (Array.isArray(v) ? v : [v]).map(String).filter((s) => s !== "");
const onOff = (v: unknown, flag: string): boolean | undefined => {
  if (v === undefined) return undefined;
  if (v === "on") return true;
  if (v === "off") return false;
  throw new AdminUsageError(`--${flag} must be on or off`);
};

/** The flags of `widget configure` as a settings change (flag names in the usage line). */
function settingsOf(v: Values): WidgetSettingsInput {
  const accent = v.accent as string | undefined;
  const raw: Record<string, unknown> = {
    title: v.title,
    placeholder: v.placeholder,
    mode: v.mode,
    position: v.position,
    theme: v.theme,
    prompts: v["no-prompts"] === true ? [] : many(v.prompt),
    campaign_ids: v["no-campaigns"] === true ? [] : many(v.campaign),
    allowed_origins: many(v.origin),
    daily_answer_cap: v["daily-cap"] === undefined ? undefined : Number(v["daily-cap"]),
  };
  if (accent !== undefined || v.background !== undefined || v["text-color"] !== undefined) {
    if (accent === undefined) throw new AdminUsageError("--accent is required with --background or --text-color");
    raw.colors = { accent, background: v.background, text: v["text-color"] };
  }
  const recommendations = onOff(v.recommendations, "recommendations");
  if (recommendations !== undefined || v["recommendations-data-model"] !== undefined) {
    raw.recommendations = { enabled: recommendations ?? true, data_model_id: v["recommendations-data-model"] };
  }
  const poweredBy = onOff(v["powered-by"], "powered-by");
  if (poweredBy !== undefined) raw.attribution = { show_powered_by: poweredBy };
  for (const k of Object.keys(raw)) if (raw[k] === undefined) delete raw[k];
  const parsed = widgetSettingsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new AdminUsageError(`${issue.path.map(String).join(".") || "settings"}: ${issue.message}`);
  }
  return parsed.data;
}

export const widgetAdminCommands: Record<string, AdminCommand> = {
  "widget configure": {
    usage: "widget configure --id <wd_...> [--title <text>] [--placeholder <text>] [--mode inline|docked] " +
      "[--position bottom-right|bottom-left] [--theme light|dark|auto] [--accent #RRGGBB [--background #RRGGBB] " +
      "[--text-color #RRGGBB]] [--prompt <pm_...|text>]... [--no-prompts] [--campaign <cp_...>]... [--no-campaigns] " +
      "[--recommendations on|off] [--recommendations-data-model <dm_...>] [--powered-by on|off] " +
      "[--origin <https://site>]... [--daily-cap <n>]",
    options: {
      id: { type: "string" },
      title: { type: "string" },
      placeholder: { type: "string" },
      mode: { type: "string" },
      position: { type: "string" },
      theme: { type: "string" },
      accent: { type: "string" },
      background: { type: "string" },
      "text-color": { type: "string" },
      prompt: { type: "string", multiple: true },
      "no-prompts": { type: "boolean" },
      campaign: { type: "string", multiple: true },
      "no-campaigns": { type: "boolean" },
      recommendations: { type: "string" },
      "recommendations-data-model": { type: "string" },
      "powered-by": { type: "string" },
      origin: { type: "string", multiple: true },
      "daily-cap": { type: "string" },
    },
    async run(deps, v) {
      const id = need(v, "id");
      const settings = settingsOf(v);
      try {
        const widget = await deps.repos.widgets.change(id, (widget) => applyWidgetSettings(deps, widget, settings));
        if (!widget) throw new AdminUsageError(`widget not found: ${id}`);
        return widget;
      } catch (err) {
        if (err instanceof AppError && !err.serverSide) throw new AdminUsageError(err.message);
        throw err;
      }
    },
  },
  "widget show": {
    usage: "widget show --id <wd_...>",
    options: { id: { type: "string" } },
    async run(deps, v) {
      const id = need(v, "id");
      const widget = await deps.repos.widgets.get(id);
      if (!widget) throw new AdminUsageError(`widget not found: ${id}`);
      return widget;
    },
  },
  "campaign active": {
    usage: "campaign active --id <cp_...> --on|--off   (whether widgets show the campaign's prompts)",
    options: { id: { type: "string" }, on: { type: "boolean" }, off: { type: "boolean" } },
    async run(deps, v) {
      const id = need(v, "id");
      if ((v.on === true) === (v.off === true)) throw new AdminUsageError("give exactly one of --on or --off");
      const campaign = await deps.repos.campaigns.change(id, (campaign) => ({ ...campaign, active: v.on === true }));
      if (!campaign) throw new AdminUsageError(`campaign not found: ${id}`);
      return campaign;
    },
  },
  "tenant white-label": {
    usage: 'tenant white-label --id <tn_...> --on|--off   (plan flag: its widgets may hide "Powered by")',
    options: { id: { type: "string" }, on: { type: "boolean" }, off: { type: "boolean" } },
    async run(deps, v) {
      const id = need(v, "id");
      if ((v.on === true) === (v.off === true)) throw new AdminUsageError("give exactly one of --on or --off");
      const tenant = await deps.repos.tenants.get(id);
      if (!tenant) throw new AdminUsageError(`tenant not found: ${id}`);
      return await deps.repos.tenants.update({ ...tenant, whiteLabel: v.on === true });
    },
  },
};
