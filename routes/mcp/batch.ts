/**
 * JSON-RPC batches on `POST /mcp`, read ahead of the SDK:
 * - an agent's batch costs its number of requests on the agent's per-minute budget;
 * - in the SDK's JSON response mode responses are matched to requests by id: in a batch where two
 *   requests share an id, the first response settled the HTTP answer and the others ran to the end
 *   (a paid call debits) with their results dropped. Such a batch is refused whole before any call runs.
 */
import { readStreamCapped } from "../../core/bytes.ts";

/** The body of a POST /mcp read ahead of the SDK: its parsed JSON, or undefined (the SDK answers). */
export async function readMcpBody(req: Request, limit: number): Promise<unknown> {
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  if (!req.body || (Number.isFinite(declared) && declared > limit)) return undefined;
  // A copy: when it is too large or not JSON, the SDK reads the original and answers in its words.
  const bytes = await readStreamCapped(req.clone().body!, limit).catch(() => null);
  if (!bytes) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}

/** How many JSON-RPC requests a body carries (at least 1: a POST of notifications still costs one). */
export function requestCount(body: unknown): number {
  if (!Array.isArray(body)) return 1;
  const requests = body.filter((m) => m && typeof m === "object" && typeof m.method === "string" && "id" in m);
  return Math.max(1, requests.length);
}

/** Whether two requests of a batch share an id (`1` and `"1"` are different ids). */
export function repeatsRequestId(body: unknown): boolean {
  if (!Array.isArray(body)) return false;
  const seen = new Set<string>();
  for (const m of body) {
    if (!m || typeof m !== "object" || typeof m.method !== "string" || !("id" in m)) continue;
    const key = `${typeof m.id}:${String(m.id)}`;
    if (seen.has(key)) return true;
    seen.add(key);
  }
  return false;
}

/** The answer to a batch that repeats a request id (JSON-RPC -32600 Invalid Request, HTTP 400). */
export function repeatedIdResponse(): Response {
  return Response.json(
    {
      jsonrpc: "2.0",
      error: { code: -32600, message: "Invalid Request: every request of a batch needs its own id" },
      id: null,
    },
    { status: 400 },
  );
}
