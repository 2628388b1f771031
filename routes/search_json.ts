import type { Context } from "hono";
import type { SearchResponse } from "../core/search/mod.ts";
import { timeSlicer } from "../core/timers.ts";

const encoder = new TextEncoder();
// JSON never holds a raw NUL (JSON.stringify escapes it): it marks where the results go.
const RESULTS_MARK = "\u0000";

/**
 * The JSON of `envelope` as pieces, the array of `results` found at `path` in it stringified and
 * encoded one element at a time in time slices: 1,000 results with full text are 21 MB, and one
 * `JSON.stringify` of them, then the encoding of that one string, held the event loop 300 ms and
 * 200 ms. Joined, the pieces are the bytes of `JSON.stringify(envelope)`.
 */
async function piecesAround(envelope: object, path: readonly string[], results: readonly unknown[]) {
  const along = (o: object, at: readonly string[]): string =>
    objectJson(
      o,
      (key, value) => key !== at[0] ? undefined : at.length === 1 ? RESULTS_MARK : along(value as object, at.slice(1)),
    );
  const [head, tail] = along(envelope, path).split(RESULTS_MARK);
  const pieces = [encoder.encode(`${head}[`)];
  const slice = timeSlicer();
  for (const [i, result] of results.entries()) {
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
export function searchJson(c: Context, out: SearchResponse): Promise<Response> {
  return resultsJson(c, out, ["response", "results"], out.response.results);
}

/**
 * A 200 of `envelope` holding `results` at `path`, the bytes `c.json(envelope, 200)` sends, sent
 * piece by piece (the legacy route's `{results}`, a search response's `response.results`).
 */
export async function resultsJson(
  c: Context,
  envelope: object,
  path: readonly string[],
  results: readonly unknown[],
): Promise<Response> {
  const pieces = await piecesAround(envelope, path, results);
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
