import type { Clock } from "./clock.ts";
import type { Repos } from "./store/mod.ts";

/**
 * Which browser origins some widget allows (the `/v1/events` CORS preflight carries no widget id,
 * so it can only ask this). Read from the widgets, kept for `ttlMs` so a flood of preflights does
 * not turn into a flood of KV scans; a new widget's origins are answered within that time.
 */
export class WidgetOrigins {
  #origins: Set<string> | null = null;
  #loadedAt = 0;
  #loading: Promise<Set<string>> | null = null;

  constructor(
    private readonly repos: Pick<Repos, "widgets">,
    private readonly clock: Clock,
    private readonly ttlMs = 30_000,
  ) {}

  /** Whether any widget lists `origin` among its allowed origins. */
  async allows(origin: string): Promise<boolean> {
    // The opaque origin never: sandboxed and data: pages on any site send it (widgetAllowsOrigin).
    if (!origin || origin === "null") return false;
    return (await this.#current()).has(origin);
  }

  #current(): Promise<Set<string>> {
    const now = this.clock.now().getTime();
    if (this.#origins && now - this.#loadedAt < this.ttlMs) return Promise.resolve(this.#origins);
    this.#loading ??= this.repos.widgets.listAll().then((widgets) => {
      this.#origins = new Set(widgets.flatMap((w) => w.allowedOrigins));
      this.#loadedAt = now;
      return this.#origins;
    }).finally(() => (this.#loading = null));
    return this.#loading;
  }
}
