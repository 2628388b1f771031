/** Tables and bar lists: the shapes most panels draw. */
import { el } from "./dom.ts";
import { fmt, pctFormat, withoutScheme } from "./format.ts";
import type { Breakdown, BreakdownRow } from "./types.ts";

/** A column of {@link table}: its heading, the cell's value of a row, and how it is shown. */
export interface Column<R> {
  label: string;
  /** The cell's value: a Node is shown as it is, anything else as text. */
  get(row: R): unknown;
  /** The value as text (default: a count for `num` columns, the value as a string otherwise). */
  format?(value: unknown): string;
  /** A number: right-aligned. */
  num?: boolean;
  className?: string;
}

/** A table of `rows`, or the `empty` line when there are none. */
export function table<R>(columns: Column<R>[], rows: R[], empty?: string): HTMLElement {
  if (!rows.length) return el("p", { className: "muted empty", text: empty || "No data in this range." });
  const head = el("tr", null, columns.map((c) => el("th", { className: c.num ? "n" : "", text: c.label })));
  const body = rows.map((r) =>
    el(
      "tr",
      null,
      columns.map((c) => {
        const v = c.get(r);
        if (v instanceof Node) return el("td", { className: c.className || "" }, [v]);
        const text = c.format ? c.format(v) : c.num ? fmt(v) : String(v ?? "");
        // A key cut short with an ellipsis keeps its whole text in the tooltip.
        return el("td", {
          className: c.num ? "n" : c.className || "",
          text,
          ...(c.className === "key" ? { title: text } : {}),
        });
      }),
    )
  );
  return el("div", { className: "scroll" }, [
    el("table", null, [el("thead", null, [head]), el("tbody", null, body)]),
  ]);
}

/** One bar of {@link bars}. */
export interface Bar {
  label: string;
  value: number;
  note: string;
}

/** Horizontal bars scaled to the largest value, or a line saying there is nothing to show. */
export function bars(rows: Bar[]): HTMLElement {
  if (!rows.some((r) => r.value > 0)) {
    return el("p", { className: "muted empty", text: "No sessions in this range." });
  }
  const max = Math.max(1, ...rows.map((r) => r.value));
  return el(
    "div",
    { className: "bars" },
    rows.map((r) => {
      const fill = el("div", { className: "fill" });
      fill.style.width = `${(100 * r.value) / max}%`;
      return el("div", { className: "bar" }, [
        el("span", { text: r.label }),
        el("div", { className: "track" }, [fill]),
        el("span", { className: "n", text: r.note }),
      ]);
    }),
  );
}

const DIMENSION_LABELS: Record<string, string> = {
  placement_id: "Placement",
  deployment_type: "Deployment type",
  referring_url: "Page",
};

/** A breakdown by placement, deployment type or referring page. */
export function breakdownTable(b: Breakdown): HTMLElement {
  const dim = b.breakdown.dimension;
  return table<BreakdownRow>([
    {
      label: DIMENSION_LABELS[dim] || dim,
      get: (r) => (r.key === null || r.key === "" ? "(not set: API traffic)" : r.key),
      format: (v) => (dim === "referring_url" ? withoutScheme(v) : v as string),
      className: "key",
    },
    { label: "Sessions", num: true, get: (r) => r.sessions },
    { label: "Queries", num: true, get: (r) => r.engagement_queries },
    { label: "Clicks", num: true, get: (r) => r.total_clicks },
    // A row with no widget load (API traffic) has no rate per load: a dash, not a 0.
    {
      label: "Queries / 100 loads",
      num: true,
      get: (r) => (r.widget_loads ? r.engagement_rate : null),
      format: (n) => (typeof n === "number" ? pctFormat.format(n) : "\u2013"),
    },
  ], b.rows);
}
