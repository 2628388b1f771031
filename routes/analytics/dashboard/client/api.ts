/**
 * Calls to the API with the key from this tab's sessionStorage, sent only in the Authorization
 * header (no cookie, no referrer), and failures told in words a reader can act on.
 */
import type { PanelLine, WidgetList } from "./types.ts";

/** Where the tab keeps the key. */
const KEY = "analytics_api_key";

export const apiKey = (): string | null => sessionStorage.getItem(KEY);
export const saveKey = (key: string): void => sessionStorage.setItem(KEY, key);
export const forgetKey = (): void => sessionStorage.removeItem(KEY);

/** The key was refused (401, 403): the reader signs in again. */
export class AuthError extends Error {}

/** A refused or failed call: `retryable` when the same view may work later (429, 5xx, network). */
export class LoadError extends Error {
  constructor(message: string, readonly retryable: boolean) {
    super(message);
  }
}

/** What a failed answer means to the reader, from its status, body and Retry-After. */
async function loadError(res: Response): Promise<LoadError> {
  const body = await res.json().catch(() => ({}));
  const said = typeof body.message === "string" ? body.message : "";
  if (res.status === 429) {
    const wait = Number(res.headers.get("retry-after"));
    const when = Number.isFinite(wait) && wait > 0 ? `in ${Math.ceil(wait)} s` : "in a minute";
    return new LoadError(`too many requests with this key; try again ${when}`, true);
  }
  if (res.status >= 500) return new LoadError(`the server failed (HTTP ${res.status}); try again`, true);
  return new LoadError(said || `HTTP ${res.status}`, false);
}

/** fetch, with a network failure told in words (the browser's own says only "Failed to fetch"). */
async function request(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    throw new LoadError("the server could not be reached; check the connection and try again", true);
  }
}

/** Query string of the parameters that have a value. */
function qs(params: Record<string, string | null | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") p.set(k, v);
  return p.toString();
}

/**
 * How a call treats the server's 30-minute analytics cache: a normal load lets it answer (the
 * browser adds no Cache-Control: its own cache is bypassed by the answers' `no-store`); Refresh asks
 * for figures computed now with `Cache-Control: no-cache`.
 */
const cacheMode = (fresh?: boolean): { headers: Record<string, string>; cache: RequestCache } =>
  fresh ? { headers: { "cache-control": "no-cache" }, cache: "no-store" } : { headers: {}, cache: "default" };

/** GET an analytics path with the tab's key: a refused key throws {@link AuthError}, any other failure {@link LoadError}. */
async function analytics(path: string, params: Record<string, string | undefined>, fresh?: boolean) {
  const mode = cacheMode(fresh);
  const res = await request(`/v1/analytics/${path}?${qs(params)}`, {
    headers: { ...mode.headers, authorization: `Bearer ${apiKey()}` },
    cache: mode.cache,
    credentials: "omit",
    referrerPolicy: "no-referrer",
  });
  if (res.status === 401 || res.status === 403) throw new AuthError("key");
  if (!res.ok) throw await loadError(res);
  return res;
}

/** One analytics answer's body. */
export async function api(path: string, params: Record<string, string | undefined>, fresh?: boolean): Promise<unknown> {
  return await (await analytics(path, params, fresh)).json();
}

/**
 * Every panel of the view in one call (GET /v1/analytics/dashboard): NDJSON lines
 * `{panel, status, body}` in the order the panels finish, each handed to `onPanel` as it arrives.
 */
export async function streamPanels(
  params: Record<string, string | undefined>,
  onPanel: (line: PanelLine) => void,
  fresh?: boolean,
): Promise<void> {
  const res = await analytics("dashboard", params, fresh);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    let chunk: ReadableStreamReadResult<string>;
    try {
      chunk = await reader.read();
    } catch {
      throw new LoadError("the connection broke while loading; try again", true);
    }
    const { value, done } = chunk;
    if (done) break;
    buffer += value;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line) onPanel(JSON.parse(line));
    }
  }
}

/** The tenant's widgets (GET /v1/widgets), or null when the call fails. */
export async function listWidgets(): Promise<WidgetList | null> {
  const res = await request("/v1/widgets", {
    headers: { authorization: `Bearer ${apiKey()}` },
    cache: "no-store",
    credentials: "omit",
    referrerPolicy: "no-referrer",
  });
  if (!res.ok) return null;
  return await res.json();
}
