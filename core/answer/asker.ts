import { answerErrors } from "./errors.ts";
import type { Widget } from "../store/mod.ts";

/** Looks up widgets by tenant (the widget repository). */
export interface TenantWidgets {
  getForTenant(tenantId: string, id: string): Promise<Widget | null>;
}

/**
 * The widget a tenant's question came through. Only the tenant's own widgets count: an id from
 * another tenant would file this tenant's traffic under someone else's widget.
 * @throws AppError 422 `widget_id not found` for an unknown widget or one of another tenant.
 */
export async function askingWidget(widgets: TenantWidgets, tenantId: string, widgetId: string): Promise<Widget> {
  const widget = await widgets.getForTenant(tenantId, widgetId);
  if (!widget) throw answerErrors.widget_not_found();
  return widget;
}

/** True for an absolute http(s) URL of reasonable length (a referring page). */
export function isHttpUrl(value: string): boolean {
  if (value.length > 2048) return false;
  try {
    const u = new URL(value);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}
