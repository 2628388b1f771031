/** Shapes the widget reads from the public widget routes (docs/widget.md, "Public routes"). */

/** A configured prompt chip. */
export interface PromptChip {
  id: string;
  text: string;
}

/** A campaign prompt of an active sponsored campaign attached to the widget. */
export interface SponsoredChip {
  campaign_id: string;
  prompt_id: string;
  text: string;
  creative_id?: string;
  line_item_id?: string;
}

/** `GET /widget/v1/{wd}/config`. */
export interface WidgetConfig {
  widget_id: string;
  title: string;
  placeholder: string;
  mode: "inline" | "docked";
  position: "bottom-right" | "bottom-left";
  theme: "light" | "dark" | "auto";
  colors: { accent: string; background?: string; text?: string };
  prompts: PromptChip[];
  sponsored: SponsoredChip[];
  recommendations: { enabled: boolean };
  attribution: { show_powered_by: boolean; text: string; url: string };
  deployment_type: string;
}

/** One numbered citation of an answer. */
export interface Citation {
  n: number;
  title: string;
  site: string;
  url: string;
}

/** One related article. */
export interface Recommendation {
  title: string;
  site: string;
  url: string;
  image_url: string | null;
  published_at?: string;
}

/** How a query was started (the `interaction_type` of its event). */
export type InteractionType = "free_form" | "suggested_prompt" | "sponsored_prompt" | "automated_followup";
