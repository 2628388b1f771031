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
  /** Origins allowed to post widget events, e.g. `https://news.example.com`. */
  allowedOrigins: string[];
  deploymentType: string;
  createdAt: string;
}

/** A sponsored-conversation campaign (`cp_`). */
export interface Campaign {
  id: string;
  tenantId: string;
  name: string;
  /** The ad-server creative ids configured on the campaign. */
  creativeIds: string[];
  aiModelId?: string;
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
