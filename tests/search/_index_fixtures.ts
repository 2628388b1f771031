/**
 * Small fixtures for tests of the in-memory index (no app, no stores): an article with only what
 * ranking reads, and vectors that all lean along one shared direction, as averaged word vectors do.
 */
import { normalized } from "../../core/search/index/vector_index.ts";
import type { Article } from "../../core/search/store/articles.ts";

/** Article `ar_<i>` with `title`, `body` and `summary`, of one site and one date. */
export function indexArticle(i: number, title: string, body = "", summary = ""): Article {
  return {
    id: `ar_${i}`,
    dataModelId: "dm_test",
    url: `https://site.example/${i}`,
    title,
    summary,
    body,
    site: "Site",
    siteDomain: "site.example",
    pubdate: "2026-01-01T00:00:00.000Z",
    pubdateUnix: 1_767_225_600,
    previewContent: "",
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
  };
}

/**
 * `count` unit vectors of `dims` that each lean along one shared direction (`common`), from a
 * seeded generator (the same seed, the same vectors).
 */
export function leaningVectors(
  seed: number,
  dims: number,
  count: number,
): { common: Float32Array; vecs: Float32Array[] } {
  let state = seed;
  const r = () => (state = (state * 16807) % 2147483647) / 2147483647 - 0.5;
  const common = normalized(Float32Array.from({ length: dims }, r));
  const vecs = Array.from({ length: count }, () => {
    const v = Float32Array.from({ length: dims }, () => r() * 0.5);
    for (let j = 0; j < dims; j++) v[j]! += 2 * common[j]!;
    return normalized(v);
  });
  return { common, vecs };
}
