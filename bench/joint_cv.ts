/**
 * The fusion re-chosen jointly with score regularization (issue 27 item 5). The fusion weights
 * (vector weight, normalisation, vector feedback) were chosen by cross-validation before score
 * regularization existed (bench/relevance_cv.ts); here they are chosen again with it, by
 * cross-validation over CISI's queries. The family was fixed (docs/relevance.md) before any of its
 * results were seen:
 *
 * - vector weight 0.1, 0.15, 0.2, 0.25, 0.3;
 * - normalisation min-max or z-score;
 * - vector feedback 10 documents weight 1, 10 documents weight 2, 5 documents weight 1;
 * - score regularization as shipped (top 50, k 10, a 0.5) or top 50, k 10, a 0.6.
 *
 * 60 settings, the shipped one first (the folds' ties go to it). Sub-family, for information: the
 * fusion and feedback with the shipped regularization (30). Each also "keeping beir-tiny": only
 * the settings that do not lower beir-tiny's nDCG@10 (a constraint from outside CISI's queries).
 *
 * **The result, fixed in advance: the whole family keeping beir-tiny**, held out over 5 folds by
 * query position and over 50 random fold sets (bench/_cv.ts), against version 2 before
 * regularization (CISI 0.4197). The rule to ship the family's setting fitted on all CISI queries:
 * held out by position >= +0.02, the mean over 50 random fold sets >= +0.019, beir-tiny unchanged.
 *
 * Every setting ranks with the service's own code, as `deno task eval` runs it: one index per
 * collection built as `evaluate` builds it, each query embedded alone, `withFeedback` (100 lexical
 * matches), then `hybrid` with the setting's fusion and regularization (100 candidates). The
 * shipped setting is checked query by query against `evaluate` itself (CISI 0.4375, beir-tiny
 * 0.9101).
 *
 *   deno run -A bench/joint_cv.ts fixtures/beir/cisi fixtures/beir-tiny   (about 20 s; BENCH_DEBUG=1 lists
 *   every setting's figure on each collection)
 */
import { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { type Fusion, FUSION_V2, SCORE_REGULARIZATION } from "../core/search/rank/retrieval_mode.ts";
import { crossValidate, fmt, mean, repeatedGain, signed } from "./_cv.ts";
import {
  assertHarnessReproduced,
  fusionGrid,
  fusionKey,
  prepareCollections,
  type RankedCollection,
  scoreFusion,
} from "./_ranking_world.ts";

const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";
const dirs = Deno.args.length ? Deno.args : ["fixtures/beir/cisi", "fixtures/beir-tiny"];
// The baseline of the gains: version 2 before score regularization (the issue's 0.4197).
const BASE: Fusion = { ...FUSION_V2, regularize: undefined };

// ---- settings (fixed before any result was seen) ------------------------------------------------

const WEIGHTS = [0.1, 0.15, 0.2, 0.25, 0.3];
const NORMALISE = ["minmax", "zscore"] as const;
const FEEDBACK = [{ docs: 10, weight: 1 }, { docs: 10, weight: 2 }, { docs: 5, weight: 1 }];
const REGULARIZE = [SCORE_REGULARIZATION, { top: 50, neighbours: 10, weight: 0.6 }];

const SHIPPED: Fusion = FUSION_V2;
const key = fusionKey;
const grid = fusionGrid(SHIPPED, {
  vectorWeights: WEIGHTS,
  normalise: NORMALISE,
  feedback: FEEDBACK,
  regularize: REGULARIZE,
});
if (grid.length !== 60) throw new Error(`the family has ${grid.length} settings, not the 60 registered`);

const show = (f: Fusion) =>
  `w ${f.vectorWeight} ${f.normalise}, feedback ${f.feedbackDocs}/${f.feedbackWeight}` +
  (f.regularize ? `, reg a ${f.regularize.weight}` : ", no reg") + (key(f) === key(SHIPPED) ? " (shipped)" : "");

// ---- collections ----------------------------------------------------------------------------------

type Collection = RankedCollection;
const embeddings = new LocalEmbeddings({ cachePath });
await embeddings.init();
const score = scoreFusion;

// ---- run ------------------------------------------------------------------------------------------

const collections = await prepareCollections(dirs, embeddings);
const [dev, ...others] = collections as [Collection, ...Collection[]];

// The shipped setting here must be `deno task eval`'s ranking, query by query.
await assertHarnessReproduced(collections, embeddings, SHIPPED, (i) => score(collections[i]!, SHIPPED));
for (const c of collections) {
  console.log(`${c.name}: shipped ${fmt(mean(score(c, SHIPPED)))}, as deno task eval ranks it`);
}

const t1 = performance.now();
const offScores = score(dev, BASE);
const off = mean(offScores);
const cands = grid.map((f) => ({ key: f, scores: score(dev, f) }));
const shipped = mean(cands[0]!.scores);
console.log(
  `# dev ${dev.name}: ${dev.data.corpus.length} documents, ${dev.data.queries.length} queries; ${grid.length} settings in ${
    ((performance.now() - t1) / 1000).toFixed(1)
  } s; version 2 before regularization ${fmt(off)}, shipped ${fmt(shipped)} (${signed(shipped - off)})`,
);
const otherMeans = others.map((c) => grid.map((f) => mean(score(c, f))));
const keepsOthers = new Set(grid.filter((_, i) => otherMeans.every((o) => o[i]! >= o[0]! - 1e-9)));
for (const [oi, c] of others.entries()) {
  console.log(
    `${c.name}: shipped ${fmt(otherMeans[oi]![0]!)}; ${
      grid.filter((_, i) => otherMeans[oi]![i]! >= otherMeans[oi]![0]! - 1e-9).length
    } of ${grid.length} settings do not lower it`,
  );
}

if (Deno.env.get("BENCH_DEBUG")) {
  console.log("\n## every setting (dev fitted, then each other collection)");
  grid.forEach((f, i) =>
    console.log(`${show(f).padEnd(52)} ${fmt(mean(cands[i]!.scores))} ${otherMeans.map((o) => fmt(o[i]!)).join(" ")}`)
  );
}
console.log("\n## best 10 settings on all dev queries (fitted, not held out)");
for (const c of [...cands].sort((a, b) => mean(b.scores) - mean(a.scores)).slice(0, 10)) {
  console.log(
    `${show(c.key).padEnd(52)} ${fmt(mean(c.scores))}${keepsOthers.has(c.key) ? "" : "  (lowers beir-tiny)"}`,
  );
}

const families: [string, (f: Fusion) => boolean][] = [
  ["whole family", () => true],
  ["fusion and feedback, shipped regularization", (f) => f.regularize === SCORE_REGULARIZATION],
];
console.log(
  `\n## 5-fold cross-validation on the dev queries (held-out nDCG@10; gains against ${fmt(off)}, ` +
    `the shipped setting always a candidate)`,
);
const fittedOf = new Map<string, Fusion>();
for (const kept of [true, false]) {
  for (const [name, keep] of families) {
    const label = `${name}${kept ? ", keeping beir-tiny" : ""}`;
    // Sorting keeps the grid's order among equals: a tie on all queries goes to the shipped setting.
    const family = cands.filter((c) => keep(c.key) && (!kept || keepsOthers.has(c.key)));
    const cv = crossValidate(family);
    const r = repeatedGain(family, offScores);
    const best = [...family].sort((a, b) => mean(b.scores) - mean(a.scores))[0]!;
    fittedOf.set(label, best.key);
    console.log(
      `${label} (${family.length}): fitted ${fmt(mean(best.scores))} (${signed(mean(best.scores) - off)}); ` +
        `held out by position ${fmt(cv.cv)} (${signed(cv.cv - off)}; ${
          signed(cv.cv - shipped)
        } against shipped); 50 random fold sets ${signed(r.mean)} (${signed(r.low)} to ${signed(r.high)}), ${
          (r.positive * 100).toFixed(0)
        } % positive`,
    );
    console.log(`  picks: ${cv.picks.map(show).join(" | ")}`);
    // Each fold's held-out nDCG@10 under its pick and under the shipped setting.
    const asShipped = crossValidate([cands[0]!]).perFold;
    console.log(
      `  per fold, pick / shipped: ${cv.perFold.map((x, f) => `${fmt(x)} / ${fmt(asShipped[f]!)}`).join(", ")}`,
    );
  }
}

console.log("\n## the fitted setting of each family on every collection");
for (const [label, f] of fittedOf) {
  const changed: string[] = [];
  const line = collections.map((c) => {
    const [before, after] = [score(c, SHIPPED), score(c, f)];
    if (c !== dev) {
      c.data.queries.forEach((q, i) => {
        if (before[i] !== after[i]) changed.push(`    ${c.name} ${q.id}: ${fmt(before[i]!)} -> ${fmt(after[i]!)}`);
      });
    }
    return `${c.name} ${fmt(mean(after))}`;
  });
  console.log(`${label}: ${show(f)}\n  ${line.join("  ")}`);
  if (Deno.env.get("BENCH_DEBUG")) { for (const l of changed) console.log(l); }
}
