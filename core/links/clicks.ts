import { type EventInput, pageAddress } from "../events.ts";
import type { ClickPayload } from "./tracking.ts";

/**
 * The `article_click` event of a followed tracking link: who served the result (tenant, caller),
 * which article at which position, and the page the reader came from.
 */
export function clickEvent(
  click: ClickPayload,
  at: Date,
  referringUrl: string | undefined,
  clientKey?: string,
): EventInput {
  return {
    event_type: "article_click",
    ts: at.toISOString(),
    click_type: "article",
    tenant_id: click.tenantId,
    agent_identity: click.caller,
    data_model_id: click.dataModelId,
    article_id: click.articleId,
    url: click.url,
    position: click.position,
    // Its page as every event keeps one; a Referer that is no http(s) URL is left out, not the click.
    referring_url: pageAddress(referringUrl),
    ...(clientKey ? { client_key: clientKey } : {}),
    // A widget's citation: the click counts in that widget's figures and its reader's session.
    ...(click.widgetId ? { widget_id: click.widgetId } : {}),
    // An answer's citation: the click counts for the model that answered, as its query does.
    ...(click.aiModelId ? { ai_agent: click.aiModelId } : {}),
    ...(click.sessionId ? { session_id: click.sessionId } : {}),
    ...click.placement,
  };
}
