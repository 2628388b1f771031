/**
 * How sure the ranking's gains are (issue 27 item 5): each collection is scored query by query as
 * `deno task eval` scores it, for the shipped ranking (version 2 with score regularization), version
 * 2 before regularization (the ranking the +0.02 target was set against: CISI 0.4197) and BM25F
 * alone; then each gain gets a 95 % interval by a paired bootstrap over the queries, the share of
 * resampled means at or above the target, and a paired sign-flip randomization test
 * (`pairedGain`, bench/_cv.ts; 100,000 resamples, seeded).
 *
 * The shipped setting is also what cross-validation picks in every fold (docs/relevance.md), so
 * its per-query gains are its held-out gains: the interval is that of the held-out figure.
 *
 *   deno run -A bench/significance.ts fixtures/beir/cisi fixtures/beir-tiny   (about 15 s)
 */
import { evaluate, loadBeir } from "../cli/eval.ts";
import { LocalEmbeddings } from "../core/search/embeddings/wink.ts";
import { FUSION_V2 } from "../core/search/rank/retrieval_mode.ts";
import { pairedGain } from "./_cv.ts";

const TARGET = 0.02;
const cachePath = Deno.env.get("EMBEDDINGS_CACHE_PATH") ?? "/tmp/svc-test-shared/wink-sg-100d-1.1.0.v1.bin";
const dirs = Deno.args.length ? Deno.args : ["fixtures/beir/cisi", "fixtures/beir-tiny"];
const embeddings = new LocalEmbeddings({ cachePath });
const f4 = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(4)}`;

for (const dir of dirs) {
  const data = await loadBeir(dir);
  const shipped = (await evaluate(data, embeddings, { fusion: FUSION_V2 })).perQuery!;
  const before = (await evaluate(data, embeddings, { fusion: { ...FUSION_V2, regularize: undefined } })).perQuery!;
  const comparisons = [
    ["shipped vs version 2 before regularization", shipped.map((q) => q.hybrid), before.map((q) => q.hybrid)],
    ["shipped vs BM25F alone", shipped.map((q) => q.hybrid), shipped.map((q) => q.bm25)],
    ["version 2 before regularization vs BM25F", before.map((q) => q.hybrid), before.map((q) => q.bm25)],
  ] as const;
  console.log(`${dir}: ${data.queries.length} queries`);
  for (const [label, after, base] of comparisons) {
    const s = pairedGain(after, base, { target: TARGET, resamples: 100_000 });
    const changed = after.filter((a, i) => a !== base[i]).length;
    const better = after.filter((a, i) => a > base[i]!).length;
    console.log(
      `  ${label.padEnd(44)} gain ${f4(s.mean)}, 95 % interval ${f4(s.low)} to ${f4(s.high)}; ` +
        `resampled means >= +${TARGET}: ${(s.atLeastTarget * 100).toFixed(1)} %; sign-flip p ${s.p.toFixed(4)}; ` +
        `${better} of ${changed} changed queries better`,
    );
  }
}
