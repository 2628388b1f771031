import { z } from "zod";

/** Lowercase slug: letters, digits and single dashes or underscores. */
export const slugSchema = z.string().regex(/^[a-z0-9]+(?:[-_][a-z0-9]+)*$/, {
  error: "must be a lowercase slug (a-z, 0-9, - and _)",
}).max(64);

/** A bare domain name, e.g. `news.example.com`. */
export const domainSchema = z.string().toLowerCase().regex(
  /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/,
  { error: "must be a domain name such as news.example.com" },
);

export interface Tenant {
  id: string;
  name: string;
  /**
   * Plan flag set by the operator (`deno task admin tenant white-label`): the tenant's widgets may
   * hide the "Powered by" line. Absent: false.
   */
  whiteLabel?: boolean;
  createdAt: string;
}

/** A publisher site inside a data model. */
export interface Site {
  domain: string;
  name: string;
}

/** A publisher data model (`dm_`): the article collection recommendations come from. */
export interface DataModel {
  id: string;
  tenantId: string;
  name: string;
  /** The service slug agents see on the marketplace (payproxy serviceSlug). */
  toolName?: string;
  sites: Site[];
  /** Reachable through the payment proxy. */
  marketplace: boolean;
  /** Retention: articles published longer ago leave search, the index and KV. Absent: kept forever. */
  maxAgeDays?: number;
  /**
   * What the publisher licenses to callers other than the owning tenant: `summary` (title, summary
   * and preview; the default) or `full_text` (also the article body as Markdown, `contents`).
   */
  license?: DataModelLicense;
  createdAt: string;
}

/** The licence settings of a data model. */
export const DATA_MODEL_LICENSES = ["summary", "full_text"] as const;
export type DataModelLicense = (typeof DATA_MODEL_LICENSES)[number];

/** How an AI model generates answers. API keys come from config, never from the record. */
export type ProviderSettings =
  | { kind: "extractive" }
  | { kind: "openai"; model: string; baseUrl?: string; temperature?: number; maxTokens?: number };

/** What an AI model emits: plain text, or a JSON payload that matches `schema`. */
export type OutputKind = { kind: "text" } | { kind: "structured"; schema: Record<string, unknown> };

/** An AI model (`am_`) answering real-time questions grounded in data models. */
export interface AiModel {
  id: string;
  tenantId: string;
  name: string;
  toolName?: string;
  groundingDataModelIds: string[];
  provider: ProviderSettings;
  output: OutputKind;
  /** Private models are never reachable through the payment proxy. */
  private: boolean;
  marketplace: boolean;
  createdAt: string;
}

/** An Ask AI widget (`wd_`) on publisher pages, backed by one AI agent. */
export interface Widget {
  id: string;
  tenantId: string;
  name: string;
  aiModelId: string;
  /**
   * Origins allowed to post widget events and call the public widget routes, e.g.
   * `https://news.example.com`.
   */
  allowedOrigins: string[];
  deploymentType: string;
  createdAt: string;
  // What the embedded widget shows and how much it may answer (docs/widget.md, "Configuration").
  // Every field is optional: widgets made before they existed take the defaults of core/widget/settings.ts.
  /** Heading of the widget. */
  title?: string;
  /** Placeholder of the question box. */
  placeholder?: string;
  mode?: "inline" | "docked";
  /** Corner of the docked button. */
  position?: "bottom-right" | "bottom-left";
  theme?: "light" | "dark" | "auto";
  /** `#RRGGBB` colours. */
  colors?: { accent: string; background?: string; text?: string };
  /** Suggested prompts shown as chips: ids of the tenant's configured prompts (`pm_`), in order. */
  promptIds?: string[];
  /** Sponsored campaigns (`cp_`) whose prompts the widget shows while they are active. */
  campaignIds?: string[];
  /** Related articles: on or off, and the data model (`dm_`, one of the AI model's) they come from. */
  recommendations?: { enabled: boolean; dataModelId?: string };
  /** Whether to show "Powered by"; hiding it needs a white-label tenant. */
  attribution?: { showPoweredBy: boolean };
  /** Most answers per UTC day; absent: the server default (`WIDGET_DAILY_ANSWER_CAP`). */
  dailyAnswerCap?: number;
}

/** A sponsored-conversation campaign (`cp_`). */
export interface Campaign {
  id: string;
  tenantId: string;
  name: string;
  /** The ad-server creative ids configured on the campaign. */
  creativeIds: string[];
  aiModelId?: string;
  /** Whether widgets show the campaign's prompts; absent: active. */
  active?: boolean;
  createdAt: string;
}

/** A configured prompt (`pm_`) shown in a sponsored conversation. */
export interface Prompt {
  id: string;
  tenantId: string;
  campaignId?: string;
  text: string;
  createdAt: string;
}
