/** The widget room's face: what other rooms and the routes may use. */

export {
  dailyCapReached,
  originNotAllowed,
  recommendationsDisabled,
  widgetErrors,
  widgetNotFound,
  widgetRateLimited,
} from "./errors.ts";

export { chipOf, scopedModel, splitAnswer, startsSourcesBlock, widgetCitations } from "./answer.ts";
export type { WidgetCitation } from "./answer.ts";
export { createWidgetLimits } from "./limits.ts";
export type { WidgetLimits } from "./limits.ts";
export {
  allowedOriginsSchema,
  applyWidgetSettings,
  publicWidgetConfig,
  recommendationsDataModel,
  widgetAllowsOrigin,
  widgetSettingsSchema,
} from "./settings.ts";
export type { PublicWidgetConfig, WidgetSettingsInput } from "./settings.ts";
