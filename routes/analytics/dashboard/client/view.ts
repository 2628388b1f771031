/**
 * The view (dates, zone, comparison, filters) lives in the URL, so it can be shared; the key never
 * does. The filters form shows it, and a submit turns the form back into URL parameters.
 */

/** The view's URL parameters, in the form's order. */
export const VIEW = [
  "start_date",
  "end_date",
  "timezone",
  "compare",
  "widget_id",
  "placement_id",
  "deployment_type",
] as const;
export type ViewKey = typeof VIEW[number];
export type View = Partial<Record<ViewKey, string>>;

/** The view in the page's URL; no `compare` parameter means the previous period. */
export function view(): View {
  const p = new URLSearchParams(location.search);
  const v: View = {};
  for (const k of VIEW) if (p.get(k)) v[k] = p.get(k)!;
  if (!("compare" in v) && !p.has("compare")) v.compare = "previous_period";
  return v;
}

/** The form's field called `name`. */
export function field(form: HTMLFormElement, name: string): HTMLInputElement | HTMLSelectElement | undefined {
  return (form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null) ?? undefined;
}

/**
 * Shows in an empty view field the value the API answered with (the default range, the default
 * zone) and marks it as such, so the submit leaves it out of the URL: a URL without dates keeps
 * meaning "the latest days" when shared. A field the user has typed into is left alone.
 */
export function showInEffect(form: HTMLFormElement, name: ViewKey, value: string): void {
  const f = field(form, name);
  if (!f || !value) return;
  if (f.value !== "" && f.value !== f.dataset.inEffect) return;
  f.value = value;
  f.dataset.inEffect = value;
}

/** The form's fields set to the view, none marked as the API's answer. */
export function showView(form: HTMLFormElement, v: View): void {
  for (const k of VIEW) {
    const f = field(form, k);
    if (!f) continue;
    f.value = v[k] || "";
    delete f.dataset.inEffect;
  }
}

/** The view a submit of the filters form asks for, as URL parameters. */
export function submittedView(form: HTMLFormElement): URLSearchParams {
  const shown = view();
  const value = (k: ViewKey) => field(form, k)?.value.trim() ?? "";
  const fromAnswer = (k: ViewKey) => field(form, k) && field(form, k)!.dataset.inEffect === value(k);
  // A date the user changed fixes the range: both dates go in, as shown. Otherwise each date is
  // kept as the URL had it, so a rolling view stays rolling.
  const dates: ViewKey[] = ["start_date", "end_date"];
  const dateEdited = dates.some((k) => value(k) !== (shown[k] || field(form, k)!.dataset.inEffect || ""));
  const p = new URLSearchParams();
  for (const k of VIEW) {
    const val = dates.includes(k) ? (dateEdited ? value(k) : shown[k]) : fromAnswer(k) ? "" : value(k);
    if (val) p.set(k, val);
    else if (k === "compare") p.set(k, "");
  }
  return p;
}
