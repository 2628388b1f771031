/**
 * The daily chart: sessions and queries per day, and the earlier period's sessions when the view
 * compares, drawn with uPlot (its own script tag, uplot.min.js, loads before this one).
 */
import type UPlot from "uplot";
import { $, current, el, put } from "./dom.ts";
import { dayIn, dayLabel, dayYearLabel, fmt } from "./format.ts";
import { comparedTo } from "./panels.ts";
import type { AskAi } from "./types.ts";

/** uPlot's global, from uplot.min.js. */
declare const uPlot: typeof UPlot;

/** Axis steps of the counts: whole numbers only. */
const COUNT_STEPS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6];

let chart: UPlot | null = null;

/** The chart's size for its box: narrower screens get a lower chart. */
function chartSize(target: HTMLElement): { width: number; height: number } {
  const width = Math.max(260, target.clientWidth || 800);
  return { width, height: width < 500 ? 200 : 260 };
}

/** Fits the chart to its box again (after the window is resized). */
export function resizeChart(): void {
  if (chart) chart.setSize(chartSize($("chart")));
}

/** Removes the chart (a signed-out tab keeps none of the tenant's figures). */
export function destroyChart(): void {
  if (chart) chart.destroy();
  chart = null;
}

/**
 * A range that ends today ends on a day still under way: its drop is not a fall in traffic. The
 * server's clock and the view's zone say which day that is.
 */
export function noteToday(a: AskAi): void {
  const days = a.daily_breakdown;
  const last = days.length ? days[days.length - 1]!.date : "";
  const today = a.meta && a.meta.generated_at ? dayIn(a.meta.timezone || "UTC", a.meta.generated_at) : "";
  const note = $("chart-note");
  const shown = Boolean(last) && last === today && Boolean($("chart").querySelector("canvas"));
  note.textContent = shown ? `${dayLabel(Date.parse(`${last}T00:00:00Z`) / 1000)} is today: counted up to now.` : "";
  note.classList.toggle("hidden", !shown);
}

export function renderChart(a: AskAi): void {
  const days = a.daily_breakdown;
  // A range across New Year names the year with each day: "25 Nov" alone would be either year.
  const spansYears = days.length > 0 && days[0]!.date.slice(0, 4) !== days[days.length - 1]!.date.slice(0, 4);
  const label = spansYears ? dayYearLabel : dayLabel;
  const xs = days.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
  const data: [number[], ...(number | null)[][]] = [
    xs,
    days.map((d) => d.sessions),
    days.map((d) => d.engagement_queries),
  ];
  const series: UPlot.Series[] = [
    { label: "Day", value: (_u, v) => (v == null ? "–" : label(v)) },
    { label: "Sessions", stroke: "#2f6fed", width: 2, value: (_u, v) => fmt(v) },
    // Blue and orange stay apart for colour-blind readers; the earlier period is a dashed grey.
    // Every line has at least 3:1 contrast on white.
    { label: "Queries", stroke: "#c4320a", width: 2, value: (_u, v) => fmt(v) },
  ];
  if (a.comparison) {
    const prev = a.comparison.daily_breakdown;
    data.push(days.map((_, i) => (prev[i] ? prev[i].sessions : null)));
    series.push({
      label: `Sessions, ${comparedTo(a)}`,
      stroke: "#667085",
      dash: [6, 4],
      width: 1.5,
      value: (_u, v) => fmt(v),
    });
  }
  const target = $("chart");
  destroyChart();
  const total = (k: "sessions" | "engagement_queries") => days.reduce((n, d) => n + (d[k] || 0), 0);
  const earlier = a.comparison ? a.comparison.daily_breakdown.reduce((n, d) => n + (d.sessions || 0), 0) : 0;
  if (!total("sessions") && !total("engagement_queries") && !earlier) {
    target.removeAttribute("role");
    target.removeAttribute("aria-label");
    put("chart", el("p", { className: "muted empty", text: "No sessions or queries in this range." }));
    return;
  }
  // The canvas says nothing to a screen reader: the container carries what it shows.
  target.setAttribute("role", "img");
  target.setAttribute(
    "aria-label",
    `Daily sessions and queries, ${days[0]!.date} to ${days[days.length - 1]!.date}: ` +
      `${fmt(total("sessions"))} sessions, ${fmt(total("engagement_queries"))} queries` +
      (a.comparison ? `; ${fmt(earlier)} sessions in the ${comparedTo(a)}` : ""),
  );
  const size = chartSize(target);
  target.replaceChildren();
  current("chart");
  // One tick per day, thinned so labels never overlap.
  const daySplits = (u: UPlot) => {
    const room = Math.max(2, Math.floor(u.width / (spansYears ? 96 : 64)));
    const step = Math.max(1, Math.ceil(xs.length / room));
    return xs.filter((_, i) => i % step === 0);
  };
  chart = new uPlot(
    {
      ...size,
      series,
      // Counts start at zero, so a quiet day reads as quiet.
      scales: {
        // A single day sits in the middle, not on the left edge of an empty axis.
        x: {
          time: true,
          range: (_u, min, max) => (xs.length === 1 ? [xs[0]! - 43200, xs[0]! + 43200] : [min, max]),
        },
        y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
      },
      axes: [
        { splits: daySplits, values: (_u, splits) => splits.map(label), space: 40 },
        // Whole numbers only: these are counts.
        { values: (_u, splits) => splits.map(fmt), size: 56, incrs: COUNT_STEPS },
      ],
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
      // The legend's marker is drawn like its line: the earlier period's is dashed there too.
      legend: { markers: { dash: (u, i) => (u.series[i]!.dash ? "dashed" : "solid") } },
    },
    data,
    target,
  );
}
