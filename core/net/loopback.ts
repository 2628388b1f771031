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

  /** Serves `req` in this process. Rejects when no app is bound (a service used without the app). */
  fetch(req: Request): Promise<Response> {
    const handler = this.#handler;
    if (!handler) return Promise.reject(new Error("no app serves this process's own routes"));
    return Promise.resolve(handler(req));
  }
}
