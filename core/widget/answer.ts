/**
 * What the public widget routes answer with, kept apart from HTTP: the widget's AI model scoped
 * to its own tenant's data models, the reader-facing answer text (without the `Sources:` block,
 * whose links are the article URLs: the widget shows our tracking links as citations instead),
 * and numbered citations.
 */
import type { Citation } from "../answer/mod.ts";
import type { AiModel, Repos, Widget } from "../store/mod.ts";
import { widgetMisconfigured } from "./errors.ts";
import type { PublicWidgetConfig } from "./settings.ts";

/** A citation as the widget shows it: its number in the answer text and our tracking link. */
export interface WidgetCitation {
  n: number;
  title: string;
  site: string;
  /** Our `/r/...` tracking link: the click is recorded once, by the redirect. */
  url: string;
}

/**
 * The widget's AI model, grounded only in data models of the widget's own tenant: whatever a
 * model record says, a widget's reader never reaches another tenant's articles.
 * @throws AppError 503 `widget_misconfigured` when the model is gone or not the tenant's.
 */
export async function scopedModel(repos: Pick<Repos, "aiModels" | "dataModels">, widget: Widget): Promise<AiModel> {
  const model = await repos.aiModels.getForTenant(widget.tenantId, widget.aiModelId);
  if (!model) throw widgetMisconfigured();
  const own: string[] = [];
  for (const id of model.groundingDataModelIds) {
    if (await repos.dataModels.getForTenant(widget.tenantId, id)) own.push(id);
  }
  return { ...model, groundingDataModelIds: own };
}

/**
 * Both providers end a text answer with the sources block as a chunk of its own
 * (`\n\nSources:\n[1] ... — https://...`): the chunk that starts it, and every later one, is
 * the tail the widget does not show as text.
 */
export const startsSourcesBlock = (chunk: string): boolean => /^\s*Sources:\n/.test(chunk);

/** Splits a whole answer into the text the reader sees and its sources block. */
export function splitAnswer(message: string): { text: string; sources: string } {
  const at = message.search(/\n\nSources:\n/);
  return at < 0 ? { text: message, sources: "" } : { text: message.slice(0, at), sources: message.slice(at) };
}

/**
 * The widget's citations: each cited article with the number the answer text gives it (read
 * from the sources block, `[n] ... — <url>`; else its position) and its tracking link.
 */
export function widgetCitations(citations: Citation[], sources: string): WidgetCitation[] {
  const numberOf = new Map<string, number>();
  for (const line of sources.split("\n")) {
    const m = /^\[(\d{1,3})\] .* — (\S+)$/.exec(line);
    if (m) numberOf.set(m[2]!, Number(m[1]));
  }
  return citations.map((c, i) => ({
    n: numberOf.get(c.url) ?? i + 1,
    title: c.title,
    site: c.site,
    url: c.source_url,
  }));
}

/** The configured prompt (chip) a question was, as the widget names it on its `query` event. */
export interface ChipFields {
  prompt_id: string;
  prompt_text: string;
  /** Of a sponsored prompt. */
  campaign_id?: string;
}

/**
 * The chip a question asked as `suggested_prompt` or `sponsored_prompt` was, found by its text among
 * the prompts the widget shows: what the widget would have put on its `query` event, for the service
 * to record when the reader left before the widget could (undefined: not a chip the widget shows).
 */
export function chipOf(config: PublicWidgetConfig, interactionType: string, query: string): ChipFields | undefined {
  const same = (text: string) => text.trim() === query;
  if (interactionType === "sponsored_prompt") {
    const s = config.sponsored.find((p) => same(p.text));
    return s && { prompt_id: s.prompt_id, prompt_text: s.text, campaign_id: s.campaign_id };
  }
  if (interactionType === "suggested_prompt") {
    const p = config.prompts.find((p) => same(p.text));
    return p && { prompt_id: p.id, prompt_text: p.text };
  }
  return undefined;
}
