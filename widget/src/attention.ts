/**
 * Viewability and engaged time, measured the way docs/events-and-metrics.md counts them:
 * `widget_viewable` once, when at least 50 % of the widget has been in view for 1 s (MRC), and a
 * `heartbeat` every 5 s while the page is visible and focused, the widget in view and the reader
 * active (an input in the last 30 s).
 */

const VIEWABLE_RATIO = 0.5;
const VIEWABLE_MS = 1000;
export const HEARTBEAT_MS = 5000;
const ACTIVE_WINDOW_MS = 30_000;

/** Watches one element; calls `viewable(pct, ms)` once and `heartbeat()` every 5 s of attention. */
export function watchAttention(
  target: Element,
  on: { viewable(pct: number, ms: number): void; heartbeat(): void },
): () => void {
  let ratio = 0;
  let since = 0;
  let viewTimer: ReturnType<typeof setTimeout> | undefined;
  let viewed = false;
  let lastInput = performance.now();

  const io = new IntersectionObserver((entries) => {
    for (const e of entries) {
      ratio = e.isIntersecting ? e.intersectionRatio : 0;
      if (viewed) continue;
      if (ratio >= VIEWABLE_RATIO && viewTimer === undefined) {
        since = performance.now();
        viewTimer = setTimeout(() => {
          viewTimer = undefined;
          if (ratio < VIEWABLE_RATIO || document.visibilityState !== "visible") return;
          viewed = true;
          on.viewable(Math.round(ratio * 100), Math.round(performance.now() - since));
        }, VIEWABLE_MS);
      } else if (ratio < VIEWABLE_RATIO && viewTimer !== undefined) {
        clearTimeout(viewTimer);
        viewTimer = undefined;
      }
    }
  }, { threshold: [0, 0.25, VIEWABLE_RATIO, 0.75, 1] });
  io.observe(target);

  const active = () => {
    lastInput = performance.now();
  };
  const inputs = ["pointerdown", "pointermove", "keydown", "scroll", "touchstart", "wheel"];
  for (const t of inputs) addEventListener(t, active, { passive: true, capture: true });

  const beat = setInterval(() => {
    const attentive = document.visibilityState === "visible" && document.hasFocus() && ratio > 0 &&
      performance.now() - lastInput < ACTIVE_WINDOW_MS;
    if (attentive) on.heartbeat();
  }, HEARTBEAT_MS);

  return () => {
    io.disconnect();
    clearTimeout(viewTimer);
    clearInterval(beat);
    for (const t of inputs) removeEventListener(t, active, { capture: true });
  };
}
