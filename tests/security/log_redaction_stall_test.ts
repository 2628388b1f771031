/**
 * Every access-log line is redacted (core/log.ts `redactText`), and its path is the caller's. The
 * JWT pattern began at a word boundary, which `-` makes, so in a path of 64 KB of `eyJ-` each `eyJ`
 * was a start that scanned to the end: 1.2 s of the event loop for one request with no credential.
 */
import assert from "node:assert/strict";
import { redactText } from "../../core/log.ts";
import { createTestWorld } from "../_helpers.ts";
import { assertNoStall, servedAndProbed } from "./_healthz.ts";

Deno.test("redactText() of 256,000 characters of `eyJ-` returns within 1 s and still redacts a token after them", () => {
  const text = `${"eyJ-".repeat(64_000)} eyJa.eyJb.sig`;
  const started = performance.now();
  const out = redactText(text);
  const ms = performance.now() - started;
  assert.ok(ms < 1000, `${Math.round(ms)} ms`);
  assert.ok(out.endsWith(" [jwt redacted]"));
  assert.equal(redactText("x-eyJa.b.c, eyJ-eyJa.b.c and eyJa"), "x-[jwt redacted], [jwt redacted] and eyJa");
});

Deno.test("GET of paths of 64 KB of `eyJ-` from four clients at once: /healthz answers within 1 s throughout", async () => {
  await using w = await createTestWorld();
  await using served = await servedAndProbed(w.app);
  const path = `/${"eyJ-".repeat(16_000)}`;
  const { out, window } = await served.measure(() =>
    Promise.all(Array.from({ length: 4 }, async () => {
      const res = await fetch(`${served.base}${path}`);
      await res.body?.cancel();
      return res.status;
    }))
  );
  assert.deepEqual(out, [404, 404, 404, 404]);
  assertNoStall(window);
  assert.ok(
    w.log.lines.some((l) => l.msg === "request" && l.status === 404 && String(l.path).length === path.length),
  );
});

Deno.test("redactText() of a 64,000-character run ending in `@` returns within 1 s and still redacts an address after it", () => {
  // The e-mail pattern `[...]+@domain` retried at every character of the run: 1.8 s for one path.
  const text = `/${"a".repeat(64_000)}@ then ada@example.org`;
  const started = performance.now();
  const out = redactText(text);
  const ms = performance.now() - started;
  assert.ok(ms < 1000, `${Math.round(ms)} ms`);
  assert.ok(out.endsWith(" then [e-mail redacted]"));
  assert.equal(
    redactText("550 <ada.lovelace@example.co.uk> rejected; bob+x@mail.example.org. user@localhost, @handle"),
    "550 <[e-mail redacted]> rejected; [e-mail redacted]. user@localhost, @handle",
  );
});
