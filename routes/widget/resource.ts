/**
 * The tenant's own widget configuration, inside the `/v1` resource family (API key):
 * `POST /v1/widgets`, `GET /v1/widgets/{id}`, `PATCH /v1/widgets/{id}`. The fields are those of
 * core/widget/settings.ts; what the page sees of them is `GET /widget/v1/{wd}/config`.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Deps } from "../../composition.ts";
import { hasIdFormat, idPattern, newId } from "../../core/ids.ts";
import type { Widget } from "../../core/store/mod.ts";
import { applyWidgetSettings, widgetErrors, widgetSettingsSchema } from "../../core/widget/mod.ts";
import type { TenantEnv } from "../env.ts";
import { bodyReader } from "../middleware/body.ts";

const bearer = [{ bearerAuth: [] }];
const messageError = z.object({ message: z.string() });
const errorBody = (description: string) => ({
  description,
  content: { "application/json": { schema: messageError } },
});
const widgetRecord = z.record(z.string(), z.unknown()).openapi("WidgetRecord", {
  description: "The widget as stored: id, tenantId, name, aiModelId, allowedOrigins, deploymentType, and the " +
    "configuration fields (title, placeholder, mode, position, theme, colors, promptIds, campaignIds, " +
    "recommendations, attribution, dailyAnswerCap); absent fields take their defaults",
});
// A derived schema: the core one may be built before zod-openapi extended zod.
const settingsBody = widgetSettingsSchema.extend({}).openapi("WidgetSettings", {
  description: "Only the fields given change. `prompts`: configured prompt ids (`pm_...`) or texts (a text " +
    "becomes a configured prompt of the tenant). `attribution.show_powered_by: false` needs a white-label plan.",
});
const createBody = widgetSettingsSchema.extend({
  name: z.string().trim().min(1).max(120),
  ai_model_id: z.string().regex(idPattern("am"), { error: "must be an am_ id" }),
  deployment_type: z.string().regex(/^[a-z0-9]+(?:[-_][a-z0-9]+)*$/, { error: "must be a lowercase slug" }).max(64)
    .optional(),
}).openapi("WidgetCreate");
const idParam = z.object({ id: z.string().openapi({ param: { name: "id", in: "path" }, example: "wd_..." }) });
const common = {
  401: errorBody("Missing or malformed API key"),
  403: errorBody("Unknown or revoked API key"),
};

const createWidget = createRoute({
  method: "post",
  path: "/widgets",
  tags: ["configuration"],
  summary: "Create an Ask AI widget",
  security: bearer,
  request: { body: { required: true, content: { "application/json": { schema: createBody } } } },
  responses: {
    201: { description: "The new widget", content: { "application/json": { schema: widgetRecord } } },
    ...common,
    409: errorBody("The tenant has `WIDGETS_MAX_PER_TENANT` widgets already (100 by default)"),
    422: errorBody("A field is wrong, or names an AI model, prompt, campaign or data model the tenant does not own"),
  },
});
const getWidget = createRoute({
  method: "get",
  path: "/widgets/{id}",
  tags: ["configuration"],
  summary: "One of the tenant's widgets, with its configuration",
  security: bearer,
  request: { params: idParam },
  responses: {
    200: { description: "The widget", content: { "application/json": { schema: widgetRecord } } },
    ...common,
    404: errorBody("No such widget in this tenant"),
  },
});
const patchWidget = createRoute({
  method: "patch",
  path: "/widgets/{id}",
  tags: ["configuration"],
  summary: "Change a widget's configuration",
  description: "Title, placeholder, mode, position, theme, colours, suggested prompts, sponsored campaigns, " +
    "recommendations, attribution, allowed origins, daily answer cap (docs/widget.md). The public " +
    "configuration follows within a minute (its cache lifetime).",
  security: bearer,
  request: { params: idParam, body: { required: true, content: { "application/json": { schema: settingsBody } } } },
  responses: {
    200: { description: "The changed widget", content: { "application/json": { schema: widgetRecord } } },
    ...common,
    404: errorBody("No such widget in this tenant"),
    422: errorBody("A field is wrong, or names a prompt, campaign or data model the tenant does not own"),
  },
});

/**
 * Serves the widget write and read-one routes on the `/v1` resource app (its API key check runs
 * first). Ids in error messages are never the caller's input.
 */
export function serveWidgetResource(
  app: OpenAPIHono<TenantEnv>,
  deps: Pick<Deps, "repos" | "clock" | "config">,
): void {
  app.use("/widgets", bodyReader({ limit: deps.config.maxBodyBytes, object: true }));
  app.use("/widgets/:id", bodyReader({ limit: deps.config.maxBodyBytes, object: true }));
  const ownWidget = async (tenantId: string, id: string): Promise<Widget> => {
    const widget = hasIdFormat("wd", id) ? await deps.repos.widgets.getForTenant(tenantId, id) : null;
    if (!widget) throw widgetErrors.widget_not_found();
    return widget;
  };

  app.openapi(createWidget, async (c) => {
    const tenantId = c.get("tenantId");
    const { name, ai_model_id, deployment_type, ...settings } = c.req.valid("json");
    // Every process keeps every widget's origins (core/widget_origins.ts): a tenant's widgets are bounded.
    const max = deps.config.widget.maxPerTenant;
    if (await deps.repos.widgets.countByTenant(tenantId) >= max) throw widgetErrors.widget_limit_reached({ max });
    if (!(await deps.repos.aiModels.getForTenant(tenantId, ai_model_id))) {
      throw widgetErrors.ai_model_not_found();
    }
    const base: Widget = {
      id: newId("wd", deps.clock),
      tenantId,
      name,
      aiModelId: ai_model_id,
      allowedOrigins: [],
      deploymentType: deployment_type ?? "embed",
      createdAt: deps.clock.now().toISOString(),
    };
    const widget = await applyWidgetSettings(deps, base, settings);
    // Checked again as it is stored: creates racing for the last places cannot pass the cap together.
    if (!(await deps.repos.widgets.createWithin(widget, max))) throw widgetErrors.widget_limit_reached({ max });
    return c.json(widget as unknown as Record<string, unknown>, 201);
  });

  app.openapi(getWidget, async (c) => {
    const widget = await ownWidget(c.get("tenantId"), c.req.valid("param").id);
    return c.json(widget as unknown as Record<string, unknown>, 200);
  });

  app.openapi(patchWidget, async (c) => {
    const tenantId = c.get("tenantId");
    const { id } = c.req.valid("param");
    const input = c.req.valid("json");
    // Applied to the widget as stored when it commits: a concurrent change of other fields stays.
    const next = await deps.repos.widgets.change(id, (widget) => {
      if (widget.tenantId !== tenantId) throw widgetErrors.widget_not_found();
      return applyWidgetSettings(deps, widget, input);
    });
    if (!next) throw widgetErrors.widget_not_found();
    return c.json(next as unknown as Record<string, unknown>, 200);
  });
}
