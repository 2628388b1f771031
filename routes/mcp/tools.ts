/**
 * The MCP tools: names, descriptions written for a model, input schemas (the REST schemas, so a bad
 * argument gets the REST 422's message) and annotations. The schemas validate; their JSON Schema
 * form is what `tools/list` shows.
 */
import { z } from "zod";
import { MAX_PROMPT_CHARS } from "../../analytics/schema.ts";
import { AppError } from "../../core/errors.ts";
import { idPattern } from "../../core/ids.ts";
import { contentsField, MAX_TEXT_CHARACTERS, searchRequestSchema } from "../../core/search/mod.ts";
import { conversationFields } from "../../core/answer/mod.ts";
import { describeIssue } from "../validation.ts";
import { MCP_TEXT_BUDGET } from "./text_budget.ts";

const DM_ID_RE = idPattern("dm");
const AM_ID_RE = idPattern("am");
const s = searchRequestSchema.shape;

/** `search_articles`: a SearchRequest plus the data model it searches. */
export const searchArticlesInput = searchRequestSchema.omit({ search_type: true }).extend({
  data_model_id: z.string().regex(DM_ID_RE, {
    error: "must start with dm_ followed by letters and digits",
  }).describe("The data model to search (`dm_...`); list_data_models names the ones you can use"),
  query: s.query.describe(
    "What to find: natural language, keywords, or an article URL (its page is read and similar articles found)",
  ),
  similarity_top_k: s.similarity_top_k.describe("How many articles to rank (default 9)"),
  num_results: s.num_results.describe("Results per page (default 10)"),
  page: s.page.describe("Page number, from 1"),
  search_algorithm: s.search_algorithm.describe(
    "semantic (default: most relevant), most_recent (newest relevant), most_recent_semantic (relevant, " +
      "newest first) or trending (matching the keywords people searched for in the last 24 hours)",
  ),
  ref: s.ref.describe("Site domain the results are shown on; with num_articles_ref, that many come from it"),
  num_articles_ref: s.num_articles_ref.describe("Minimum number of results from the ref domain"),
}).loose();

/** `get_article`: one article's full text. */
export const getArticleInput = z.object({
  data_model_id: z.string().regex(DM_ID_RE, {
    error: "must start with dm_ followed by letters and digits",
  }).describe("The data model the article is in (`dm_...`)"),
  url: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }).max(2048, {
    error: "must be at most 2048 characters",
  }).describe("The article's `url` as search_articles gave it"),
  max_characters: contentsField.shape.max_characters.describe(
    `Most characters of the text (default and at most ${MAX_TEXT_CHARACTERS})`,
  ),
});

/** `ask`: a question for an AI model. */
export const askInput = z.object({
  ai_model_id: z.string().regex(AM_ID_RE, {
    error: "ai_model_id is not in the correct format: expected am_ followed by letters and digits",
  }).describe("The AI model to ask (`am_...`); list_ai_models names the ones you can use"),
  query: z.string().trim().min(1, { error: "query cannot be empty" }).max(
    MAX_PROMPT_CHARS,
    { error: `query is too long: the limit is ${MAX_PROMPT_CHARS} characters` },
  ).describe("The question, in a sentence"),
  related_questions: z.boolean({ error: "must be true or false" }).optional().describe(
    "Also return three follow-up questions (`related_questions`) built from the cited articles",
  ),
  ...conversationFields,
});

const day = (what: string) => z.string({ error: "must be a string" }).optional().describe(what);

/** `analytics_summary`: the Ask AI rollup filters. */
export const analyticsSummaryInput = z.object({
  start_date: day("YYYY-MM-DD (UTC), inclusive; default: 6 days before end_date"),
  end_date: day("YYYY-MM-DD (UTC), inclusive, at most 365 days after start_date; default: today"),
  widget_id: day("Only this Ask AI widget (`wd_...`)"),
  deployment_type: day("Only this deployment type, e.g. embed, brand_agent, sponsored_conversation"),
  placement_id: day("Only this placement"),
});

const empty = z.object({});

/** What a tool call may touch, as MCP annotations say it. */
interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** One tool as `tools/list` shows it, plus its validating schema. */
export interface ToolDefinition {
  name: ToolName;
  title: string;
  description: string;
  schema: z.ZodType;
  annotations: ToolAnnotations;
  /** Whether agents (storefront tokens) get it. */
  forAgents: boolean;
  /** Whether tenant keys get it (default: yes). */
  forTenants?: boolean;
  /** Its REST route words messages with the field name in the sentence (`query cannot be empty`). */
  sentenceMessages?: boolean;
}

export type ToolName =
  | "search_articles"
  | "get_article"
  | "ask"
  | "list_data_models"
  | "list_ai_models"
  | "analytics_summary"
  | "balance";

const readOnly = (title: string, openWorld: boolean): ToolAnnotations => ({
  title,
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: openWorld,
});

/** Every tool, in the order `tools/list` shows them. */
export const TOOLS: ToolDefinition[] = [
  {
    name: "search_articles",
    title: "Search articles",
    description: "Find news articles in a data model. Give `data_model_id` (from list_data_models) and a " +
      "`query`. Narrow with `include_domains` / `exclude_domains` (up to 100 each; a domain covers its " +
      "subdomains) and `start_date` / `end_date` (ISO date or date-time, on the publication date). Pick " +
      "`search_algorithm` most_recent for news of the day, trending for what readers follow now. Set " +
      "`categories` / `exclude_categories` (list_data_models shows the top ones), `authors`, `include_text` / " +
      "`exclude_text` (phrases). Set `explain: true` to see why each result ranked. Set `highlights: " +
      "{max_characters, per_result}` to get the passages of each article that answer the query, within that " +
      "character budget; `contents: {text: true}` adds the full text as Markdown where the publisher licenses it. " +
      `One result carries at most ${MCP_TEXT_BUDGET.toLocaleString("en-US")} characters of texts and highlights, ` +
      "shared by its results (and by the calls of a batch): ask fewer results (num_results) for longer texts. " +
      "Returns title, author, date, summary and a link per " +
      "article; cite the link when you use one. Paid per call with a storefront agent token.",
    schema: searchArticlesInput,
    annotations: readOnly("Search articles", true),
    forAgents: true,
  },
  {
    name: "get_article",
    title: "Get an article's full text",
    description: "Read one article in full, as clean Markdown (headings, lists and links kept). Give " +
      "`data_model_id` and the article's `url` from search_articles; `max_characters` caps the text (within the " +
      `${MCP_TEXT_BUDGET.toLocaleString("en-US")} characters of article text a request or batch carries). Only ` +
      "where the publisher licenses full text (your own data models always). Cite the link when you use it.",
    schema: getArticleInput,
    annotations: readOnly("Get an article's full text", true),
    forAgents: false,
  },
  {
    name: "ask",
    title: "Ask an AI model",
    description: "Ask an AI model (from list_ai_models) a question; it answers from fresh articles of its " +
      "data models, with the articles it used as citations when it has them. Use for a direct answer; use " +
      "search_articles for a list of articles. For a follow-up, pass the earlier turns as `messages` (or " +
      "`conversation: true`, then the returned `conversation_id`); `related_questions: true` suggests three " +
      "next questions. Paid per call with a storefront agent token.",
    schema: askInput,
    annotations: readOnly("Ask an AI model", true),
    forAgents: true,
    sentenceMessages: true,
  },
  {
    name: "list_data_models",
    title: "List data models",
    description: "List the data models (article collections) you can search, with their ids, names and, " +
      "for agents, the price of a search. Call this first to get a data_model_id.",
    schema: empty,
    annotations: readOnly("List data models", false),
    forAgents: true,
  },
  {
    name: "list_ai_models",
    title: "List AI models",
    description: "List the AI models you can ask, with their ids, names and, for agents, the price of a " +
      "question. Call this first to get an ai_model_id.",
    schema: empty,
    annotations: readOnly("List AI models", false),
    forAgents: true,
  },
  {
    name: "analytics_summary",
    title: "Ask AI analytics summary",
    description: "The Ask AI engagement rollup of your account: widget loads, viewable sessions, queries, " +
      "clicks, session time and rates, with a daily breakdown. Dates are UTC days (default: the last 7). " +
      "Read-only; needs a tenant API key.",
    schema: analyticsSummaryInput,
    annotations: readOnly("Ask AI analytics summary", false),
    forAgents: false,
  },
  {
    name: "balance",
    title: "Credit balance",
    description: "Your credit left at this storefront: the total and each plan's remaining USD. Free. Paid " +
      "results carry the same figures in _meta.usage (cost_usd, balance_usd, plan_id, request_id).",
    schema: empty,
    annotations: readOnly("Credit balance", false),
    forAgents: true,
    forTenants: false,
  },
];

const byName = new Map(TOOLS.map((t) => [t.name, t]));

/** The tool of a name, or undefined. */
export function toolNamed(name: string): ToolDefinition | undefined {
  return byName.get(name as ToolName);
}

/** `tools/list` entries (JSON Schema made once per process). */
export const toolListings = (() => {
  const cache = new Map<ToolName, Record<string, unknown>>();
  return (forAgent: boolean) =>
    TOOLS.filter((t) => forAgent ? t.forAgents : t.forTenants !== false).map((t) => {
      let listing = cache.get(t.name);
      if (!listing) {
        const { $schema: _, ...inputSchema } = z.toJSONSchema(t.schema, { io: "input", unrepresentable: "any" });
        listing = { name: t.name, title: t.title, description: t.description, inputSchema, annotations: t.annotations };
        cache.set(t.name, listing);
      }
      return listing;
    });
})();

/**
 * Validates a tool's arguments with its schema.
 * @throws {AppError} 422 with the REST route's message for the first problem.
 */
export function parseArguments<T>(tool: ToolDefinition, args: unknown): T {
  // With the input on each issue, an absent argument reads "<name> is required", whatever the type message.
  const parsed = tool.schema.safeParse(args ?? {}, { reportInput: true });
  if (parsed.success) return parsed.data as T;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.map(String).join(".");
  const sentence = tool.sentenceMessages && field !== "" && issue.message.startsWith(`${field} `);
  throw new AppError("unprocessable", "invalid_request", sentence ? issue.message : describeIssue(issue));
}
