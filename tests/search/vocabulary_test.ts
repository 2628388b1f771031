import assert from "node:assert/strict";
import { VocabularyIndex } from "../../core/search/embeddings/vocabulary.ts";

const vocabulary = (words: string[]) => new VocabularyIndex(new TextEncoder().encode(words.join("\n")), words.length);

Deno.test("VocabularyIndex finds each word at its row, a repeated word at its first row, and misses as undefined", () => {
  const words = ["the", "storm", "stor", "storms", "café", "日本", "🙂", "storm", "", 'say "hi"'];
  const index = vocabulary(words);
  assert.equal(index.get("the"), 0);
  assert.equal(index.get("storm"), 1, "a repeated word keeps its first row, as a Map built in row order");
  assert.equal(index.get("stor"), 2, "a prefix is its own word");
  assert.equal(index.get("storms"), 3);
  assert.equal(index.get("café"), 4);
  assert.equal(index.get("日本"), 5);
  assert.equal(index.get("🙂"), 6);
  assert.equal(index.get(""), 8);
  assert.equal(index.get('say "hi"'), 9);
  for (const miss of ["Storm", "cafe", "日", "storm ", "x".repeat(500)]) {
    assert.equal(index.get(miss), undefined, miss);
    assert.equal(index.get(miss), undefined, `${miss} again (from the memo)`);
    assert.equal(index.has(miss), false);
  }
  assert.equal(index.size, 9);
  assert.deepEqual([...index.keys()], ["the", "storm", "stor", "storms", "café", "日本", "🙂", "", 'say "hi"']);
});

Deno.test("VocabularyIndex answers the same as a Map over 50,000 words, past its memo's limit", () => {
  const words = Array.from({ length: 50_000 }, (_, i) => `w${(i * 7919) % 50_000}x${i % 13}`);
  const index = vocabulary(words);
  const map = new Map<string, number>();
  words.forEach((w, i) => map.has(w) || map.set(w, i));
  assert.equal(index.size, map.size);
  let probes = 0;
  while (probes < VocabularyIndex.MEMO_LIMIT + 10_000) {
    for (let i = 0; i < 1_000; i++, probes++) {
      const word = i % 3 === 0 ? `missing${probes}` : words[(probes * 31) % words.length]!;
      assert.equal(index.get(word), map.get(word));
    }
  }
});

Deno.test("VocabularyIndex refuses bytes that do not hold one word per row", () => {
  assert.throws(() => new VocabularyIndex(new TextEncoder().encode("a\nb"), 3), /one word per row/);
});
