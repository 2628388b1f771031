import assert from "node:assert/strict";
import { LineBuffer } from "../../core/log_buffer.ts";
import { type AccessLine, createLogger, redactFields, redactText } from "../../core/log.ts";

const decoder = new TextDecoder();

/** The access line of a plain `/healthz` request; `fields` replace its own. */
const accessLine = (fields: Partial<AccessLine> = {}): AccessLine => ({
  method: "GET",
  path: "/healthz",
  status: 200,
  duration_ms: 0.12,
  tenant: null,
  caller: null,
  request_id: "r-1",
  ...fields,
});

function collecting() {
  const writes: string[] = [];
  return { writes, out: (bytes: Uint8Array) => void writes.push(decoder.decode(bytes)) };
}

Deno.test("LineBuffer writes waiting lines in one call when flushed, in order, nothing lost", () => {
  const { writes, out } = collecting();
  const buffer = new LineBuffer({ out, intervalMs: 60_000 });
  try {
    for (let i = 0; i < 5; i++) buffer.write(`{"n":${i}}`);
    assert.equal(writes.length, 0, "nothing written before a flush");
    buffer.flush();
    assert.deepEqual(writes, ['{"n":0}\n{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n']);
    buffer.flush();
    assert.equal(writes.length, 1, "an empty flush writes nothing");
  } finally {
    buffer.close();
  }
});

Deno.test("LineBuffer writes as soon as maxBytes wait", () => {
  const { writes, out } = collecting();
  const buffer = new LineBuffer({ out, maxBytes: 20, intervalMs: 60_000 });
  try {
    buffer.write("0123456789");
    assert.equal(writes.length, 0);
    buffer.write("abcdefghij");
    assert.deepEqual(writes, ["0123456789\nabcdefghij\n"]);
  } finally {
    buffer.close();
  }
});

Deno.test("LineBuffer writes a waiting line after intervalMs without more lines", async () => {
  const { writes, out } = collecting();
  const buffer = new LineBuffer({ out, intervalMs: 5 });
  try {
    buffer.write("late line");
    // The timer is unref'd: wait on a timer of our own.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(writes, ["late line\n"]);
  } finally {
    buffer.close();
  }
});

Deno.test("LineBuffer.close() writes what waits, then every later line at once", () => {
  const { writes, out } = collecting();
  const buffer = new LineBuffer({ out, intervalMs: 60_000 });
  buffer.write("before");
  buffer.close();
  assert.deepEqual(writes, ["before\n"]);
  buffer.write("after");
  assert.deepEqual(writes, ["before\n", "after\n"]);
});

Deno.test("createLogger(): lines of the same millisecond share a stamp; fields still redacted and may override", () => {
  const lines: Record<string, unknown>[] = [];
  let ms = Date.parse("2026-11-26T10:00:00.000Z");
  const log = createLogger({ clock: () => new Date(ms), write: (l) => void lines.push(JSON.parse(l)) });
  log.info("a", { api_key: "ak_secretsecret", path: "/x?token=abc" });
  ms += 1;
  log.info("b", { msg: "overridden" });
  log.debug("dropped");
  assert.deepEqual(lines, [
    { ts: "2026-11-26T10:00:00.000Z", level: "info", msg: "a", api_key: "[redacted]", path: "/x?token=[redacted]" },
    { ts: "2026-11-26T10:00:00.001Z", level: "info", msg: "overridden" },
  ]);
});

Deno.test("createLogger(): a line built by hand is byte for byte JSON.stringify of the redacted line object", () => {
  const written: string[] = [];
  const at = new Date("2026-11-26T10:00:00.000Z");
  const log = createLogger({ clock: () => at, write: (l) => void written.push(l) });
  const cases: Record<string, unknown>[] = [
    { method: "GET", path: "/healthz", status: 200, duration_ms: 0.12, tenant: null, caller: null, request_id: "r-1" },
    { quote: 'say "hi"\\ \n\t\u0001 é 😀 \ud800', n: -0, inf: Infinity, nan: NaN, yes: true, gone: undefined },
    { path: "/r?token=abc&key=k", auth: "Bearer abc.def", jwt: "eyJa.eyJb.sig", key: "ak_12345678abcdef" },
    { api_key: "x", token: 12, password: null, cookie: { a: 1 }, secret: undefined },
    { nested: { authorization: "Basic abc", n: 1 }, list: [1, "ak_12345678abcdef"], when: at },
    { "2": "index first", b: 1, "01": "not an index" },
    { level: "overridden", msg: undefined, extra: "x" },
    { 'we"ird': "name", "": "empty" },
  ];
  for (const fields of cases) log.warn("message with Bearer abc", fields);
  log.error("no fields");
  const expected = cases.map((fields) => {
    const line: Record<string, unknown> = {
      ts: at.toISOString(),
      level: "warn",
      msg: "message with Bearer [redacted]",
    };
    return JSON.stringify(Object.assign(line, redactFields(fields)));
  });
  expected.push(JSON.stringify({ ts: at.toISOString(), level: "error", msg: "no fields" }));
  assert.deepEqual(written, expected);
});

Deno.test("LineBuffer keeps multi-byte text whole and sends a line longer than its buffer after what waits", () => {
  const { writes, out } = collecting();
  const buffer = new LineBuffer({ out, maxBytes: 10, intervalMs: 60_000 });
  try {
    buffer.write("é😀");
    const long = "x".repeat(100_000);
    buffer.write(long);
    assert.deepEqual(writes, ["é😀\n", `${long}\n`]);
  } finally {
    buffer.close();
  }
});

Deno.test("createLogger().request() writes the bytes info('request', fields) writes, and nothing below info", () => {
  const fast: string[] = [];
  const slow: string[] = [];
  const at = new Date("2026-11-26T10:00:00.000Z");
  const log = createLogger({ clock: () => at, write: (l) => void fast.push(l) });
  const reference = createLogger({ clock: () => at, write: (l) => void slow.push(l) });
  const cases: AccessLine[] = [
    accessLine(),
    {
      method: "POST",
      path: '/v1/api-keys/ak_12345678abcdef/"quoted"\\é😀\ud800',
      status: 499,
      duration_ms: 1234.5,
      tenant: "tn_1",
      caller: "payproxy:ag Bearer abc",
      request_id: "3f0c6a8e-1b1e-4c3e-9a53-9b0f1c2d3e4f",
    },
    {
      method: "ak_12345678",
      path: "/",
      status: 500,
      duration_ms: -0,
      tenant: "",
      caller: null,
      request_id: "eyJa.eyJb.c",
    },
    accessLine({ path: "/", status: NaN, duration_ms: Infinity, request_id: "r" }),
  ];
  for (const line of cases) {
    log.request(line);
    reference.info("request", { ...line });
  }
  assert.deepEqual(fast, slow);
  const quiet: string[] = [];
  createLogger({ level: "warn", clock: () => at, write: (l) => void quiet.push(l) }).request(cases[0]!);
  assert.deepEqual(quiet, []);
});

Deno.test("createLogger({ lines }).request() writes into the buffer the bytes of the line as a string, a line too long for it as a string", () => {
  const at = new Date("2026-11-26T10:00:00.000Z");
  const batches: Uint8Array[] = [];
  const lines = new LineBuffer({ out: (b) => void batches.push(b.slice()), maxBytes: 4096 });
  const direct = createLogger({ clock: () => at, write: lines.write, lines });
  const asText: string[] = [];
  const reference = createLogger({ clock: () => at, write: (l) => void asText.push(l) });
  const cases: AccessLine[] = [
    accessLine(),
    {
      method: "PURGE",
      path: '/x/"q"\\\u0001\u007f é 😀 \ud800 ak_12345678abcdef?token=abc',
      status: 404,
      duration_ms: 1e21,
      tenant: "tn_é",
      caller: "agent:Bearer abc.def",
      request_id: "eyJa.eyJb.sig",
    },
    { method: "ak_12345678", path: "", status: 0, duration_ms: -0, tenant: "", caller: "", request_id: "" },
    accessLine({ path: "/" + "p".repeat(15_000), duration_ms: 1, request_id: "r" }),
    accessLine({ path: "/v1/\u2028\u2029", status: 201, duration_ms: 3.5, request_id: "r-2" }),
  ];
  for (const line of cases) {
    direct.request(line);
    reference.request(line);
  }
  lines.close();
  const written = new TextDecoder().decode(new Uint8Array(batches.flatMap((b) => [...b])));
  assert.equal(written, asText.map((l) => `${l}\n`).join(""));
  for (const l of asText) JSON.parse(l);
});

Deno.test("createLogger({ lines }).request(): statuses and durations are written as JSON.stringify writes them", () => {
  const at = new Date("2026-11-26T10:00:00.000Z");
  let written = "";
  const lines = new LineBuffer({ out: (b) => void (written += decoder.decode(b)), maxBytes: 1 << 16 });
  const direct = createLogger({ clock: () => at, write: lines.write, lines });
  const expected: string[] = [];
  const reference = createLogger({ clock: () => at, write: (l) => void expected.push(`${l}\n`) });
  // Every status; durations of whole and hundredths of milliseconds (how the access log rounds
  // them) across magnitudes; and numbers of other shapes, which take String().
  const values: number[] = [-0, -1, -0.5, 0.001, 0.125, 1 / 3, 5e-324, 1e12, 1e12 - 0.01, 1e21, 2 ** 53];
  for (let status = 0; status < 1000; status++) values.push(status);
  for (let cents = 0; cents < 20_000; cents++) values.push(cents / 100);
  for (let scale = 1e2; scale <= 1e14; scale *= 10) {
    for (let i = 1; i <= 300; i++) values.push(Math.round(scale * i * 0.7071) / 100);
  }
  for (const value of values) {
    const line = accessLine({ status: value, duration_ms: value, request_id: "r" });
    direct.request(line);
    reference.info("request", { ...line });
  }
  lines.close();
  assert.equal(written, expected.join(""));
});

Deno.test("redactText(): every credential shape, schemes in any case and after any white space", () => {
  const cases: [string, string][] = [
    ["/healthz", "/healthz"],
    ["key ak_12345678abcdef here", "key ak_[redacted] here"],
    ["Bearer abc.def", "Bearer [redacted]"],
    ["BEARER abc", "BEARER [redacted]"],
    ["payment\u00a0eyJhbGciOi", "payment [redacted]"],
    ["Basic\tdXNlcjpwYXNz", "Basic [redacted]"],
    ["jwt eyJa.eyJb.sig", "jwt [jwt redacted]"],
    ["/x?api_key=k1&token=t2&page=3", "/x?api_key=[redacted]&token=[redacted]&page=3"],
    ["/v1/data-models/dm_1/articles", "/v1/data-models/dm_1/articles"],
  ];
  for (const [text, want] of cases) assert.equal(redactText(text), want, text);
});
