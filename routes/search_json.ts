import type { Context } from "hono";
import type { SearchResponse } from "../core/search/mod.ts";
import { timeSlicer } from "../core/timers.ts";

const encoder = new TextEncoder();
// JSON never holds a raw NUL (JSON.stringify escapes it): it marks where the results go.
const RESULTS_MARK = "\u0000";

/**
 * The JSON of a search response as pieces, each result stringified and encoded in time slices: 1,000
 * results with full text are 21 MB, and one `JSON.stringify` of them, then the encoding of that one
 * string, held the event loop 300 ms and 200 ms. Joined, the pieces are the bytes of `JSON.stringify(out)`.
 */
async function searchResponsePieces(out: SearchResponse): Promise<Uint8Array[]> {
  const [head, tail] = objectJson(
    out,
    (key, value) =>
      key === "response"
        ? objectJson(value as Record<string, unknown>, (inner) => inner === "results" ? RESULTS_MARK : undefined)
        : undefined,
  ).split(RESULTS_MARK);
  const pieces = [encoder.encode(`${head}[`)];
  const slice = timeSlicer();
  for (const [i, result] of out.response.results.entries()) {
    pieces.push(encoder.encode(`${i ? "," : ""}${JSON.stringify(result)}`));
    await slice();
  }
  pieces.push(encoder.encode(`]${tail}`));
  return pieces;
}

/** `JSON.stringify(o)` of a plain object, with the JSON of some members given by `member`. */
function objectJson(o: object, member: (key: string, value: unknown) => string | undefined): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(o)) {
    const json = member(key, value) ?? JSON.stringify(value) as string | undefined;
    if (json !== undefined) parts.push(`${JSON.stringify(key)}:${json}`);
  }
  return `{${parts.join(",")}}`;
}

/** A 200 of a search response, the bytes `c.json(out, 200)` sends, sent piece by piece. */
export async function searchJson(c: Context, out: SearchResponse): Promise<Response> {
  const pieces = await searchResponsePieces(out);
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < pieces.length) controller.enqueue(pieces[next++]!);
      else controller.close();
    },
  });
  const length = pieces.reduce((n, p) => n + p.length, 0);
  return c.body(body, 200, { "content-type": "application/json", "content-length": String(length) });
}
