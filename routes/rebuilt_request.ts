/**
 * A request rebuilt over another body (the server's idle-timed stream, the body reader's bytes) whose
 * `signal` is still the incoming one's: a route that must know whether its client left before it
 * answered (the widget's non-streamed answer) reads it there. Read only when asked: touching the
 * incoming signal costs a request an AbortSignal, which most requests never need.
 */
class RebuiltRequest extends Request {
  readonly #incoming: Request;

  constructor(incoming: Request, body: BodyInit) {
    super(incoming.url, { method: incoming.method, headers: incoming.headers, body });
    this.#incoming = incoming;
  }

  override get signal(): AbortSignal {
    return this.#incoming.signal;
  }
}

/** `incoming` over `body`, with the incoming request's method, headers and (when read) signal. */
export const rebuiltRequest = (incoming: Request, body: BodyInit): Request => new RebuiltRequest(incoming, body);
