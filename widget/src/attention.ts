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

  // The viewable second runs while the page is visible and the widget half in view, and starts
  // again after a break of either (a hidden tab is a break the observer does not report).
  const check = () => {
    const inView = ratio >= VIEWABLE_RATIO && document.visibilityState === "visible";
    if (viewed) return;
    if (inView && viewTimer === undefined) {
      since = performance.now();
      viewTimer = setTimeout(() => {
        viewTimer = undefined;
        if (ratio < VIEWABLE_RATIO || document.visibilityState !== "visible") return;
        viewed = true;
        on.viewable(Math.round(ratio * 100), Math.round(performance.now() - since));
      }, VIEWABLE_MS);
    } else if (!inView && viewTimer !== undefined) {
      clearTimeout(viewTimer);
      viewTimer = undefined;
    }
  };
  const io = new IntersectionObserver((entries) => {
    for (const e of entries) ratio = e.isIntersecting ? e.intersectionRatio : 0;
    check();
  }, { threshold: [0, 0.25, VIEWABLE_RATIO, 0.75, 1] });
  io.observe(target);
  document.addEventListener("visibilitychange", check);

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
    document.removeEventListener("visibilitychange", check);
    clearTimeout(viewTimer);
    clearInterval(beat);
    for (const t of inputs) removeEventListener(t, active, { capture: true });
  };
}
