/**
 * Widget configuration: the fields a publisher sets on a widget (`PATCH /v1/widgets/{id}`,
 * `deno task admin widget configure`), their defaults, the checks that every id they name is the
 * tenant's own, and the public configuration the loader reads (`GET /widget/v1/{wd}/config`).
 */
import { z } from "zod";
import type { Clock } from "../clock.ts";
import { hasIdFormat, idPattern, type IdPrefix, newId } from "../ids.ts";
import type { Campaign, Prompt, Repos, Widget } from "../store/mod.ts";
import { widgetErrors } from "./errors.ts";

/** What a widget made before configuration existed shows. */
export const WIDGET_DEFAULTS = {
  title: "Ask AI",
  placeholder: "Ask a question",
  mode: "inline",
  position: "bottom-right",
  theme: "auto",
  accent: "#1a73e8",
} as const;

/** Most suggested prompts, attached campaigns and allowed origins a widget holds. */
export const MAX_WIDGET_PROMPTS = 8;
export const MAX_WIDGET_CAMPAIGNS = 5;
export const MAX_WIDGET_ORIGINS = 20;
/** Longest prompt text (a chip is a short question). */
export const MAX_PROMPT_TEXT = 200;
/** Largest daily answer cap a widget may set. */
export const MAX_DAILY_ANSWER_CAP = 10_000_000;

/** The "Powered by" line the widget shows unless the plan lets the tenant hide it. */
export const POWERED_BY_TEXT = "Powered by Ask AI";

const hexColour = z.string().regex(/^#[0-9a-fA-F]{6}$/, { error: "must be a #RRGGBB colour" }).transform((v) =>
  v.toLowerCase()
);
const shortText = (max: number) =>
  z.string().trim().min(1, { error: "must not be empty" }).max(max, { error: `must be at most ${max} characters` })
    // Control characters have no place in a label (and would let a text fake line structure).
    .refine((v) => !/\p{Cc}/u.test(v), { error: "must not contain control characters" });
const origin = z.string().max(2048).transform((v, ctx) => {
  try {
    const u = new URL(v);
    if ((u.protocol === "https:" || u.protocol === "http:") && u.origin !== "null") return u.origin;
  } catch { /* below */ }
  ctx.addIssue({ code: "custom", message: "must be an http(s) origin such as https://news.example.com" });
  return z.NEVER;
});
/**
 * A widget's allowed origins: each an http(s) URL reduced to its origin (a path is dropped, case and
 * default ports normalised). One schema for the API and the admin CLI: anything else (a bare
 * `localhost:8001`, `file:`, `data:`) has the origin "null", which every sandboxed page sends.
 */
export const allowedOriginsSchema = z.array(origin).max(MAX_WIDGET_ORIGINS, {
  error: `must hold at most ${MAX_WIDGET_ORIGINS} origins`,
});
/**
 * Whether a request's `Origin` may use the widget: one of its allowed origins, and never the opaque
 * origin `null` (sandboxed iframes, `data:` and `file:` pages send it, on any site), whatever a
 * widget stored before origins were checked on the way in.
 */
export function widgetAllowsOrigin(
  widget: Pick<Widget, "allowedOrigins">,
  origin: string | undefined,
): origin is string {
  return !!origin && origin !== "null" && widget.allowedOrigins.includes(origin);
}

const idOf = (prefix: IdPrefix) => z.string().regex(idPattern(prefix), { error: `must be a ${prefix}_ id` });

/**
 * A change of a widget's configuration (snake_case, like every request body): only the fields
 * given change. `prompts` items are a configured prompt's id (`pm_...`) or a text, which becomes
 * a configured prompt of the tenant (an existing one with the same text is reused).
 */
export const widgetSettingsSchema = z.object({
  name: shortText(120).optional(),
  title: shortText(80).optional(),
  placeholder: shortText(120).optional(),
  mode: z.enum(["inline", "docked"]).optional(),
  position: z.enum(["bottom-right", "bottom-left"]).optional(),
  theme: z.enum(["light", "dark", "auto"]).optional(),
  colors: z.object({ accent: hexColour, background: hexColour.optional(), text: hexColour.optional() }).strict()
    .optional(),
  prompts: z.array(shortText(MAX_PROMPT_TEXT)).max(MAX_WIDGET_PROMPTS, {
    error: `must hold at most ${MAX_WIDGET_PROMPTS} prompts`,
  }).optional(),
  campaign_ids: z.array(idOf("cp")).max(MAX_WIDGET_CAMPAIGNS, {
    error: `must hold at most ${MAX_WIDGET_CAMPAIGNS} campaigns`,
  }).optional(),
  recommendations: z.object({ enabled: z.boolean(), data_model_id: idOf("dm").optional() }).strict().optional(),
  attribution: z.object({ show_powered_by: z.boolean() }).strict().optional(),
  allowed_origins: allowedOriginsSchema.optional(),
  daily_answer_cap: z.number().int().min(0).max(MAX_DAILY_ANSWER_CAP).optional(),
}).strict();
export type WidgetSettingsInput = z.infer<typeof widgetSettingsSchema>;

/** What applying settings reads and writes. */
export interface WidgetSettingsDeps {
  repos: Pick<Repos, "tenants" | "aiModels" | "dataModels" | "campaigns" | "prompts">;
  clock: Clock;
}

/**
 * The widget with `input` applied, after checking that every id it names belongs to the
 * widget's tenant (and the data model to the widget's AI model). Prompt texts become configured
 * prompts of the tenant. The caller saves the result.
 * @throws AppError 422 `invalid_widget_settings` naming the field (never the value).
 */
export async function applyWidgetSettings(
  deps: WidgetSettingsDeps,
  widget: Widget,
  input: WidgetSettingsInput,
): Promise<Widget> {
  const { repos, clock } = deps;
  const tenantId = widget.tenantId;
  const next: Widget = { ...widget };
  if (input.name !== undefined) next.name = input.name;
  if (input.title !== undefined) next.title = input.title;
  if (input.placeholder !== undefined) next.placeholder = input.placeholder;
  if (input.mode !== undefined) next.mode = input.mode;
  if (input.position !== undefined) next.position = input.position;
  if (input.theme !== undefined) next.theme = input.theme;
  if (input.colors !== undefined) {
    const { accent, background, text } = input.colors;
    next.colors = { accent, ...(background ? { background } : {}), ...(text ? { text } : {}) };
  }
  if (input.allowed_origins !== undefined) next.allowedOrigins = [...new Set(input.allowed_origins)];
  if (input.daily_answer_cap !== undefined) next.dailyAnswerCap = input.daily_answer_cap;

  // Prompt texts become records only once every check has passed (below): a refused change leaves nothing behind.
  const newPrompts: Prompt[] = [];
  if (input.prompts !== undefined) {
    const owned = await repos.prompts.listByTenant(tenantId);
    const ids: string[] = [];
    for (const [i, item] of input.prompts.entries()) {
      let prompt: Prompt | undefined;
      if (hasIdFormat("pm", item)) {
        prompt = owned.find((p) => p.id === item);
        if (!prompt) throw widgetErrors.prompt_not_found({ index: i });
        if (prompt.campaignId) throw widgetErrors.prompt_of_campaign({ index: i });
      } else {
        prompt = owned.find((p) => !p.campaignId && p.text === item);
        if (!prompt) {
          prompt = { id: newId("pm", clock), tenantId, text: item, createdAt: clock.now().toISOString() };
          newPrompts.push(prompt);
          owned.push(prompt);
        }
      }
      if (!ids.includes(prompt.id)) ids.push(prompt.id);
    }
    next.promptIds = ids;
  }

  if (input.campaign_ids !== undefined) {
    for (const [i, id] of input.campaign_ids.entries()) {
      if (!(await repos.campaigns.getForTenant(tenantId, id))) {
        throw widgetErrors.campaign_not_found({ index: i });
      }
    }
    next.campaignIds = [...new Set(input.campaign_ids)];
  }

  if (input.recommendations !== undefined) {
    const dmId = input.recommendations.data_model_id;
    if (dmId !== undefined) {
      const model = await repos.aiModels.getForTenant(tenantId, widget.aiModelId);
      const dm = await repos.dataModels.getForTenant(tenantId, dmId);
      if (!dm || !model?.groundingDataModelIds.includes(dmId)) {
        throw widgetErrors.recommendations_data_model_not_grounding();
      }
    }
    next.recommendations = { enabled: input.recommendations.enabled, ...(dmId ? { dataModelId: dmId } : {}) };
  }

  if (input.attribution !== undefined) {
    if (!input.attribution.show_powered_by && !(await repos.tenants.get(tenantId))?.whiteLabel) {
      throw widgetErrors.powered_by_needs_white_label();
    }
    next.attribution = { showPoweredBy: input.attribution.show_powered_by };
  }
  for (const prompt of newPrompts) await repos.prompts.create(prompt);
  return next;
}

/** One suggested prompt chip. */
export interface PublicPrompt {
  id: string;
  text: string;
}

/** A campaign prompt, shown marked "Sponsored". */
export interface PublicSponsoredPrompt {
  campaign_id: string;
  prompt_id: string;
  text: string;
  creative_id?: string;
}

/** The public configuration the loader reads: presentation only, never a secret or an internal id. */
export interface PublicWidgetConfig {
  widget_id: string;
  title: string;
  placeholder: string;
  mode: "inline" | "docked";
  position: "bottom-right" | "bottom-left";
  theme: "light" | "dark" | "auto";
  colors: { accent: string; background?: string; text?: string };
  prompts: PublicPrompt[];
  sponsored: PublicSponsoredPrompt[];
  recommendations: { enabled: boolean };
  attribution: { show_powered_by: boolean; text: string; url: string };
  deployment_type: string;
}

/** Whether a campaign's prompts are shown now. */
export const campaignActive = (c: Campaign): boolean => c.active !== false;

/** The data model a widget's related articles come from: the configured one, else the AI model's first. */
export function recommendationsDataModel(widget: Widget, groundingDataModelIds: string[]): string | undefined {
  if (widget.recommendations?.enabled === false) return undefined;
  const chosen = widget.recommendations?.dataModelId ?? groundingDataModelIds[0];
  return chosen && groundingDataModelIds.includes(chosen) ? chosen : undefined;
}

/**
 * The widget's public configuration: its presentation with defaults, its suggested prompts, and
 * the prompts of its active sponsored campaigns. Only the tenant's own prompts and campaigns are
 * read, so a stale id never shows another tenant's text.
 */
export async function publicWidgetConfig(
  repos: Pick<Repos, "tenants" | "aiModels" | "campaigns" | "prompts">,
  widget: Widget,
  attributionUrl: string,
): Promise<PublicWidgetConfig> {
  const tenantId = widget.tenantId;
  const prompts = await repos.prompts.listByTenant(tenantId);
  const byId = new Map(prompts.map((p) => [p.id, p]));
  // A campaign's prompt is never shown unmarked (nor once its campaign is paused), whatever a widget holds.
  const suggested = (widget.promptIds ?? []).flatMap((id) => {
    const p = byId.get(id);
    return p && !p.campaignId ? [{ id: p.id, text: p.text }] : [];
  });
  const sponsored: PublicSponsoredPrompt[] = [];
  for (const campaignId of widget.campaignIds ?? []) {
    const campaign = await repos.campaigns.getForTenant(tenantId, campaignId);
    if (!campaign || !campaignActive(campaign)) continue;
    for (const p of prompts) {
      if (p.campaignId !== campaign.id) continue;
      sponsored.push({
        campaign_id: campaign.id,
        prompt_id: p.id,
        text: p.text,
        ...(campaign.creativeIds[0] ? { creative_id: campaign.creativeIds[0] } : {}),
      });
    }
  }
  const model = await repos.aiModels.getForTenant(tenantId, widget.aiModelId);
  const hideable = widget.attribution?.showPoweredBy === false && (await repos.tenants.get(tenantId))?.whiteLabel;
  return {
    widget_id: widget.id,
    title: widget.title ?? WIDGET_DEFAULTS.title,
    placeholder: widget.placeholder ?? WIDGET_DEFAULTS.placeholder,
    mode: widget.mode ?? WIDGET_DEFAULTS.mode,
    position: widget.position ?? WIDGET_DEFAULTS.position,
    theme: widget.theme ?? WIDGET_DEFAULTS.theme,
    colors: widget.colors ?? { accent: WIDGET_DEFAULTS.accent },
    prompts: suggested,
    sponsored,
    recommendations: {
      enabled: recommendationsDataModel(widget, model?.groundingDataModelIds ?? []) !== undefined,
    },
    attribution: { show_powered_by: !hideable, text: POWERED_BY_TEXT, url: attributionUrl },
    deployment_type: widget.deploymentType,
  };
}
