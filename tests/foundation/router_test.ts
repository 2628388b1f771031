/**
 * routes/router.ts: the app's router answers every path as Hono's TrieRouter does over the same
 * table (same handlers, same order, same params), and the paths outside the widget's prefix run on
 * RegExpRouter, whose matchers routes/reg_exp_router_cache.ts builds once per route table: a copy
 * from its cache answers as a RegExpRouter built afresh.
 */
import assert from "node:assert/strict";
import type { Result } from "hono/router";
import { RegExpRouter } from "hono/router/reg-exp-router";
import { TrieRouter } from "hono/router/trie-router";
import { CachedRegExpRouter } from "../../routes/reg_exp_router_cache.ts";
import { mayMatchUnder, PrefixSplitRouter } from "../../routes/router.ts";
import { createTestWorld } from "../_helpers.ts";

/** Handlers in order and each one's params, whichever router's result shape. */
function resolved<T>(result: Result<T>): [T, Record<string, string>][] {
  const [matches, stash] = result as [[T, Record<string, string | number>][], string[] | undefined];
  return matches.map(([handler, params]) => {
    const values: Record<string, string> = {};
    for (const [name, at] of Object.entries(params)) values[name] = stash ? stash[at as number]! : String(at);
    return [handler, values];
  });
}

/** A concrete path a route pattern matches: parameters filled in, a wildcard as two segments. */
function example(path: string, n: number): string {
  return path
    .replace(/:([A-Za-z_]+)(\{[^}]*\})?\??/g, (_m, name) => `${name}-${n}`)
    .replace(/\*$/, `w${n}/x`)
    .replace(/\/\*\//g, `/w${n}/`);
}

function sameAsTrie(routes: [string, string][], paths: [string, string][]) {
  const split = new PrefixSplitRouter<string>(["/widget/v1"]);
  const trie = new TrieRouter<string>();
  for (const [method, path] of routes) {
    split.add(method, path, `${method} ${path}`);
    trie.add(method, path, `${method} ${path}`);
  }
  for (const [method, path] of paths) {
    assert.deepEqual(resolved(split.match(method, path)), resolved(trie.match(method, path)), `${method} ${path}`);
  }
  return split;
}

Deno.test("PrefixSplitRouter matches as TrieRouter does, literal and parameter siblings under the prefix included", () => {
  const routes: [string, string][] = [
    ["ALL", "*"],
    ["GET", "/healthz"],
    ["ALL", "/v1/data-models/*"],
    ["GET", "/v1/data-models/:id"],
    ["GET", "/v1/data-models/:id/articles"],
    ["GET", "/widget/v1/loader.js"],
    ["GET", "/widget/v1/assets/:name"],
    ["ALL", "/widget/v1/:wd/*"],
    ["GET", "/widget/v1/:wd/config"],
    ["POST", "/widget/v1/:wd/ask"],
    ["ALL", "/widget/v1/*"],
    ["ALL", "/widget/v1x/*"],
  ];
  const paths: [string, string][] = [];
  for (const method of ["GET", "POST", "DELETE"]) {
    for (const path of ["/", "/healthz", "/widget/v1", "/widget/v1/", "/widget/v1x/a", "/widget/v2/a", "/nope/v1/x"]) {
      paths.push([method, path]);
    }
    for (const [, route] of routes) paths.push([method, example(route, 1)]);
  }
  const split = sameAsTrie(routes, paths);
  assert.equal(split.restRouterName, "RegExpRouter");
  // Another literal beside a parameter outside the prefix: still right, on the trie for all.
  const refused = sameAsTrie([...routes, ["ALL", "/:anything/v1/*"]], [...paths, ["GET", "/x/v1/y"]]);
  assert.equal(refused.restRouterName, "TrieRouter");
  // The same tables again: the matchers, and the refusal, now come from the cache.
  assert.equal(sameAsTrie(routes, paths).restRouterName, "RegExpRouter");
  const refusedAgain = sameAsTrie([...routes, ["ALL", "/:anything/v1/*"]], [...paths, ["GET", "/x/v1/y"]]);
  assert.equal(refusedAgain.restRouterName, "TrieRouter");
});

Deno.test("mayMatchUnder() sends a route outside the prefix to the trie too when it can match there", () => {
  for (const path of ["*", "/*", "/widget/*", "/:x/v1/*", "/:x/:y/config", "/widget/:v/ask"]) {
    assert.equal(mayMatchUnder(path, "/widget/v1"), true, path);
  }
  for (const path of ["/healthz", "/widget", "/v1/*", "/widget/v2/*", "/:x"]) {
    assert.equal(mayMatchUnder(path, "/widget/v1"), false, path);
  }
});

/** The app's (method, path) table, and for each route a path it matches (both methods for `ALL`) plus a few strays. */
async function appTable(): Promise<{ routes: [string, string][]; paths: [string, string][] }> {
  await using w = await createTestWorld();
  const routes = w.app.routes.map((r) => [r.method, r.path] as [string, string]);
  const paths: [string, string][] = [];
  for (const [method, path] of routes) {
    for (const m of method === "ALL" ? ["GET", "POST"] : [method]) paths.push([m, example(path, 7)]);
  }
  paths.push(["GET", "/nope"], ["GET", "/widget/v1/assets/widget.0123.js"], ["OPTIONS", "/widget/v1/wd_1/ask"]);
  return { routes, paths };
}

Deno.test("CachedRegExpRouter answers every route of the app as a fresh RegExpRouter, its own handlers from the cache", async () => {
  // The routes and paths outside the widget's prefix: those PrefixSplitRouter gives its RegExpRouter.
  const outside = ([, path]: [string, string]) => !/^\/widget\/v1(\/|$)/.test(path);
  const table = await appTable();
  const routes = table.routes.filter(outside);
  const paths = table.paths.filter(outside);
  const fresh = new RegExpRouter<string>();
  const cached = ["first", "second", "third"].map((app) => {
    const router = new CachedRegExpRouter<string>();
    routes.forEach(([method, path], i) => router.add(method, path, `${app} ${i}`));
    return { app, router };
  });
  routes.forEach(([method, path], i) => fresh.add(method, path, `fresh ${i}`));
  for (const [method, path] of paths) {
    const expected = resolved(fresh.match(method, path)).map(([h, params]) => [h.replace("fresh", ""), params]);
    for (const { app, router } of cached) {
      const got = resolved(router.match(method, path));
      assert.ok(
        got.every(([h]) => h.startsWith(`${app} `)),
        `${app}: ${method} ${path} answered another app's handler`,
      );
      assert.deepEqual(got.map(([h, params]) => [h.replace(app, ""), params]), expected, `${app}: ${method} ${path}`);
    }
  }
  assert.ok(
    paths.some(([method, path]) => resolved(fresh.match(method, path)).length > 1),
    "no path matched two routes",
  );
  assert.throws(() => cached[1]!.router.add("GET", "/late", "late"), /already built/);
});

Deno.test("the app's router: every route's path matches as on TrieRouter, and the rest runs on RegExpRouter", async () => {
  await using w = await createTestWorld();
  const { routes, paths } = await appTable();
  sameAsTrie(routes, paths);
  const res = await w.app.request("/healthz");
  await res.body?.cancel();
  assert.equal((w.app.router as PrefixSplitRouter<unknown>).restRouterName, "RegExpRouter");
});
