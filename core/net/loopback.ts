/** An HTTP handler of this process (the app's `fetch`). */
export type LocalHandler = (req: Request) => Response | Promise<Response>;

/**
 * This process's own routes, for services that call them without a network hop (the paid proxy
 * calling the payproxy routes when both are served here). Services are built before the app, so
 * the app binds its handler when it is created; the app built last serves.
 */
export class Loopback {
  #handler: LocalHandler | null = null;

  /** Makes `handler` answer the calls sent here. */
  bind(handler: LocalHandler): void {
    this.#handler = handler;
  }

  /**
   * Serves `req` in this process. Rejects when no app is bound (a service used without the app), and,
   * as `fetch` does, when the request's signal aborts first (a caller's deadline holds in-process too).
   */
  fetch(req: Request): Promise<Response> {
    const handler = this.#handler;
    if (!handler) return Promise.reject(new Error("no app serves this process's own routes"));
    const signal = req.signal;
    if (signal.aborted) return Promise.reject(signal.reason);
    const served = Promise.resolve(handler(req));
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      served.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }
}
