/**
 * axe-core (from npm) run inside a page. It is evaluated through the DevTools protocol, which the
 * page's CSP does not govern, so pages are checked under their own strict CSP.
 *
 * @example
 * assert.deepEqual(await seriousViolations(page), []);
 */
import type { AxeResults, RunOptions } from "axe-core";
import type { Page } from "puppeteer-core";

/** The part of axe-core's API these checks call. */
type AxeApi = { run(options: RunOptions): Promise<AxeResults> };

/** One rule that failed, with where (a few selectors) and how often. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  nodes: number;
  where: string[];
}

let source: string | undefined;

/** Every violation axe finds on the page as it is now. */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  source ??= (await import("axe-core/axe.min.js", { with: { type: "text" } })).default;
  const present = await page.evaluate(() => typeof (globalThis as { axe?: unknown }).axe === "object");
  if (!present) await page.evaluate(source);
  return await page.evaluate(async () => {
    // The global the axe source above defined.
    const axe = (window as unknown as { axe: AxeApi }).axe;
    // Only violations are read: axe then skips the details of passes and inapplicable rules (a quarter of its time).
    const result = await axe.run({ resultTypes: ["violations"] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact ?? null,
      nodes: v.nodes.length,
      where: v.nodes.slice(0, 3).map((n) => n.target.join(" ")),
    }));
  });
}

/** The serious and critical violations only: what must be 0 on every page we serve. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  return (await axeViolations(page)).filter((v) => v.impact === "serious" || v.impact === "critical");
}

/** Landmark rules: the page's parts are all inside landmarks, with one main at the top level. */
const LANDMARK_RULES = /^(region|landmark-)/;

/**
 * What must be 0 on every page we serve: serious and critical violations, and any landmark fault
 * (content outside a landmark, a missing, nested or duplicated main).
 */
export async function pageFaults(page: Page): Promise<AxeViolation[]> {
  return (await axeViolations(page)).filter((v) =>
    v.impact === "serious" || v.impact === "critical" || LANDMARK_RULES.test(v.id)
  );
}
