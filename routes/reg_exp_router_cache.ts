import { MESSAGE_MATCHER_IS_ALREADY_BUILT, type ParamIndexMap, type Result, UnsupportedPathError } from "hono/router";
import { RegExpRouter } from "hono/router/reg-exp-router";

/** Hono's RegExpRouter matcher of one method: the regular expression, handlers per capture, static paths. */
type Matcher<T> = [RegExp, [T, ParamIndexMap][][], Record<string, Result<T>>];
type MatcherMap<T> = Record<string, Matcher<T> | null>;

/** RegExpRouter with its build exposed, over handlers that are each route's index in the table. */
class IndexRegExpRouter extends RegExpRouter<number> {
  build(): MatcherMap<number> {
    return this.buildAllMatchers() as MatcherMap<number>;
  }
}

/** The matchers built per route table (its methods and paths in order), or `"refused"`. */
const builtTables = new Map<string, MatcherMap<number> | "refused">();

/**
 * Hono's `RegExpRouter`, its matchers built once per process for a route table: the first app
 * with a given list of (method, path) builds them (about 4 ms for our 274 routes, at its first
 * request), and every later app with the same list (each test world builds one) gets a copy with
 * its own handlers. The build reads only methods and paths, so the copy is what `RegExpRouter`
 * would have built: same regular expression, same handlers in the same order, same params. A table
 * `RegExpRouter` refuses is refused again from the cache (`UnsupportedPathError`, which sends
 * `SmartRouter` on to the next router). Matching itself is Hono's own.
 */
export class CachedRegExpRouter<T> extends RegExpRouter<T> {
  #routes: [string, string, T][] | undefined = [];

  override add(method: string, path: string, handler: T): void {
    if (!this.#routes) throw new Error(MESSAGE_MATCHER_IS_ALREADY_BUILT);
    this.#routes.push([method, path, handler]);
  }

  /** Called by Hono's `match` on the first request. */
  protected override buildAllMatchers(): MatcherMap<T> {
    const routes = this.#routes;
    if (!routes) throw new Error(MESSAGE_MATCHER_IS_ALREADY_BUILT);
    this.#routes = undefined;
    let key = "";
    for (const route of routes) key += `${JSON.stringify(route[0])} ${JSON.stringify(route[1])}\n`;
    let built = builtTables.get(key);
    if (!built) {
      try {
        const router = new IndexRegExpRouter();
        routes.forEach(([method, path], i) => router.add(method, path, i));
        built = router.build();
      } catch (e) {
        if (!(e instanceof UnsupportedPathError)) throw e;
        built = "refused";
      }
      builtTables.set(key, built);
    }
    if (built === "refused") throw new UnsupportedPathError();
    return withHandlers(built, routes.map((route) => route[2]));
  }
}

/** A copy of `built` that answers `handlers[i]` where it answered `i`; expressions and params shared. */
function withHandlers<T>(built: MatcherMap<number>, handlers: T[]): MatcherMap<T> {
  // Indexing, not destructuring: a destructured tuple costs an iterator, and this runs ~1,200 times an app.
  const swap = (data: [number, ParamIndexMap][]) => {
    const out: [T, ParamIndexMap][] = [];
    for (let k = 0; k < data.length; k++) out.push([handlers[data[k]![0]]!, data[k]![1]]);
    return out;
  };
  const matchers: MatcherMap<T> = Object.create(null);
  for (const method of Object.keys(built)) {
    const matcher = built[method];
    if (!matcher) {
      matchers[method] = matcher;
      continue;
    }
    const [regexp, byCapture, byStaticPath] = matcher;
    const staticMap: Record<string, Result<T>> = Object.create(null);
    for (const path of Object.keys(byStaticPath)) {
      const found = byStaticPath[path] as [[number, ParamIndexMap][], string[]];
      staticMap[path] = [swap(found[0]), found[1]];
    }
    // A capture that ends no route has no handler list (a hole): it stays one.
    matchers[method] = [regexp, byCapture.map((data) => data && swap(data)), staticMap];
  }
  return matchers;
}
