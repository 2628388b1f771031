import assert from "node:assert/strict";
import { sseEvents } from "../../widget/src/api.ts";
import { hexColor, safeHref, textOn } from "../../widget/src/values.ts";

/** A body that arrives in the given pieces. */
const body = (...pieces: string[]) =>
  new ReadableStream<Uint8Array<ArrayBuffer>>({
    start(c) {
      for (const p of pieces) c.enqueue(new TextEncoder().encode(p));
      c.close();
    },
  });

const collect = async (s: ReadableStream<Uint8Array<ArrayBuffer>>) => {
  const out: { event: string; data: string }[] = [];
  for await (const e of sseEvents(s)) out.push(e);
  return out;
};

Deno.test("sseEvents() reads events split anywhere across chunks, CRLF lines and multi-line data", async () => {
  const events = await collect(body(
    "event: tok",
    'en\ndata: {"text":"a"}\n',
    '\r\nevent: token\r\ndata: {"text":',
    '"b"}\r\n\r\n: a comment\n\ndata: line 1\ndata: line 2\n\nevent: done\ndata: {}',
  ));
  assert.deepEqual(events, [
    { event: "token", data: '{"text":"a"}' },
    { event: "token", data: '{"text":"b"}' },
    { event: "message", data: "line 1\nline 2" },
    { event: "done", data: "{}" },
  ]);
});

Deno.test("safeHref() links only absolute http(s) URLs", () => {
  assert.equal(safeHref("https://svc.test/r/abc"), "https://svc.test/r/abc");
  assert.equal(safeHref("http://svc.test/img?src=x"), "http://svc.test/img?src=x");
  for (
    const bad of ["javascript:alert(1)", "JAVASCRIPT:alert(1)", "data:text/html,x", "/r/abc", "//evil.test/x", "", 42]
  ) {
    assert.equal(safeHref(bad), null, String(bad));
  }
});

Deno.test("hexColor() takes #RRGGBB only; textOn() picks the readable text colour", () => {
  assert.equal(hexColor("#0b5cad"), "#0b5cad");
  for (const bad of ["red", "#fff", "#12345g", "url(x)", "#0b5cad;x", null]) assert.equal(hexColor(bad), null);
  assert.equal(textOn("#0b5cad"), "#ffffff");
  assert.equal(textOn("#ffd400"), "#111111");
});
