import type { EventInput } from "../events.ts";
import type { ClickPayload } from "./tracking.ts";

/**
 * The page of a `Referer`, as the widget reports its own page: origin and path, no query or fragment
 * (a page whose Referrer-Policy sends its whole address may carry a session token or an e-mail
 * there, and the tenant reads `referring_url`). Anything but an http(s) URL is left out.
 */
function pageAddress(referer: string | undefined): string | undefined {
  const url = referer ? URL.parse(referer) : null;
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) return undefined;
  return (url.origin + url.pathname).slice(0, 2048);
}

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
