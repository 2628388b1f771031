import type { Result, Router } from "hono/router";
import { SmartRouter } from "hono/router/smart-router";
import { TrieRouter } from "hono/router/trie-router";
import { CachedRegExpRouter } from "./reg_exp_router_cache.ts";

/**
 * Hono's router for the whole app, split by path prefix. Hono's default (`SmartRouter`) matches
 * with `RegExpRouter` (one regular expression; a map for static paths) unless the route table has a
 * path segment that is a literal beside a parameter, and then takes `TrieRouter` for every path.
 * Ours has one such place, the widget's `/widget/v1/loader.js` and `/widget/v1/assets/:name` beside
 * `/widget/v1/:wd/config`, which put all 250 routes on the trie (about 0.4 µs more a request,
 * bench/RESULTS.md, "Fixed cost of a request, third pass").
 *
 * Here the paths under `triePrefixes` go to a `TrieRouter` and all others to Hono's default, which
 * then takes `RegExpRouter` (and still falls back to the trie should another such pair appear), its
 * matchers built once per process for a route table (routes/reg_exp_router_cache.ts). A
 * request is matched by exactly one of them, and each returns its routes in the order they were
 * added, as Hono's routers all do; a route that can match under a prefix without starting with it
 * (`*`, `/*`, `/:any/...`) goes to both.
 */
export class PrefixSplitRouter<T> implements Router<T> {
  readonly name = "PrefixSplitRouter";
  readonly #trie = new TrieRouter<T>();
  readonly #rest = new SmartRouter<T>({ routers: [new CachedRegExpRouter(), new TrieRouter()] });
  readonly #prefixes: string[];

  constructor(triePrefixes: string[]) {
    this.#prefixes = triePrefixes.map((p) => p.replace(/\/+$/, ""));
  }

  add(method: string, path: string, handler: T): void {
    if (this.#underPrefix(path)) {
      this.#trie.add(method, path, handler);
      return;
    }
    this.#rest.add(method, path, handler);
    if (this.#prefixes.some((prefix) => mayMatchUnder(path, prefix))) this.#trie.add(method, path, handler);
  }

  /** Which router the paths outside the prefixes use, once one was matched (`RegExpRouter` unless refused). */
  get restRouterName(): string | undefined {
    try {
      return this.#rest.activeRouter.name;
    } catch {
      return undefined;
    }
  }

  match(method: string, path: string): Result<T> {
    return this.#underPrefix(path) ? this.#trie.match(method, path) : this.#rest.match(method, path);
  }

  #underPrefix(path: string): boolean {
    for (const prefix of this.#prefixes) {
      if (path.startsWith(prefix) && (path.length === prefix.length || path[prefix.length] === "/")) return true;
    }
    return false;
  }
}

/**
 * Whether a route path that does not start with `prefix` may still match a path under it: segment
 * by segment, each of the prefix's segments is met by the same literal, a parameter (`:name`,
 * `:name{re}`), or a wildcard (`*`, which matches the rest).
 */
export function mayMatchUnder(routePath: string, prefix: string): boolean {
  const route = routePath.split("/").filter(Boolean);
  const wanted = prefix.split("/").filter(Boolean);
  if (routePath === "*" || route[0] === "*") return true;
  for (let i = 0; i < wanted.length; i++) {
    const segment = route[i];
    if (segment === undefined) return false;
    if (segment === "*") return true;
    if (segment.startsWith(":")) continue;
    if (segment !== wanted[i]) return false;
  }
  return true;
}
