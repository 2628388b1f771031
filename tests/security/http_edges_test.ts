/**
 * Round 6, HTTP edges across every route family: requests a browser never sends but anyone with a
 * socket can, over a real port where the server's own layer matters.
 */
import assert from "node:assert/strict";
import { startServer } from "../../routes/server.ts";
import { createTestWorld } from "../_helpers.ts";

const enc = new TextEncoder();

/**
 * The head and body of a raw HTTP/1.1 answer, the body unframed: a server may send it with a
 * `Content-Length` or chunked (`Transfer-Encoding: chunked`), and both are the same answer.
 */
function splitAnswer(answer: string): [string, string] {
  const at = answer.indexOf("\r\n\r\n");
  const head = at === -1 ? answer : answer.slice(0, at);
  let body = at === -1 ? "" : answer.slice(at + 4);
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    let out = "";
    for (let rest = body; rest.length > 0;) {
      const eol = rest.indexOf("\r\n");
      const size = parseInt(rest.slice(0, eol), 16);
      if (!(size > 0)) break;
      out += rest.slice(eol + 2, eol + 2 + size);
      rest = rest.slice(eol + 2 + size + 2);
    }
    body = out;
  }
  return [head, body];
}

/** One request of raw bytes on a new connection (`Connection: close`); the whole answer as text. */
async function rawExchange(port: number, head: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(enc.encode(head));
    let text = "";
    const buf = new Uint8Array(4096);
    while (true) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    return text;
  } finally {
    try {
      conn.close();
    } catch { /* closed by the server */ }
  }
}

Deno.test("http edges: TRACE and TRACK get the route family's 404 with a request id and an access-log line, never the server's bare 500", async () => {
  await using w = await createTestWorld();
  const server = startServer(w.app.fetch, { log: w.log });
  try {
    // `/healthz` has no middleware; `/v1/events` and the widget routes read bodies in middleware.
    const cases: [string, string, RegExp][] = [
      ["/healthz", "", /^\{"message":"Not found"\}$/],
      ["/v1/events", "", /^\{"message":"Not found"\}$/],
      ["/v1/events", '{"events":[]}', /^\{"message":"Not found"\}$/],
      ["/widget/v1/wd_01jd3k6q8s4m0v2x9c7b5n1r3t/ask", '{"query":"x"}', /"code":"widget_not_found"/],
      ["/agent/identity", '{"type":"anonymous"}', /^\{"error":"/],
    ];
    for (const method of ["TRACE", "TRACK"]) {
      for (const [path, body, expected] of cases) {
        const length = body ? `Content-Type: application/json\r\nContent-Length: ${enc.encode(body).length}\r\n` : "";
        const answer = await rawExchange(
          server.port,
          `${method} ${path} HTTP/1.1\r\nHost: svc.test\r\n${length}Connection: close\r\n\r\n${body}`,
        );
        const [head, text] = splitAnswer(answer);
        assert.match(head!, /^HTTP\/1\.1 404 /, `${method} ${path}: ${head}`);
        assert.match(head!, /\r\nx-request-id: \S+/i, `${method} ${path}`);
        assert.match(text!, expected, `${method} ${path}: ${text}`);
      }
    }
    const logged = w.log.lines.filter((l) => l.msg === "request" && (l.method === "TRACE" || l.method === "TRACK"));
    assert.equal(logged.length, 10);
    assert.ok(logged.every((l) => l.status === 404));
    assert.equal(w.log.lines.filter((l) => l.level === "error").length, 0);
  } finally {
    await server.shutdown(1000);
  }
});

Deno.test("http edges: a Host header that is not a host name is 400, so it cannot change the path the app serves behind a proxy's path rules", async () => {
  await using w = await createTestWorld();
  const server = startServer(w.app.fetch, { log: w.log });
  try {
    const exchange = async (target: string, host: string | null, version = "1.1") => {
      const hostLine = host === null ? "" : `Host: ${host}\r\n`;
      const answer = await rawExchange(
        server.port,
        `GET ${target} HTTP/${version}\r\n${hostLine}Connection: close\r\n\r\n`,
      );
      const [head, body] = splitAnswer(answer);
      return { status: Number(head!.split(" ")[1]), body: body! };
    };
    // Deno.serve builds the request URL as `http://{Host}{target}`: a Host holding a path made the
    // app serve `/payproxy/metrics` for what HAProxy (which passes Host through) saw as `/healthz`,
    // past an edge rule such as `http-request deny if { path_beg /payproxy/metrics }`.
    for (const host of ["svc.test/payproxy/metrics?", "svc.test/payproxy/metrics#", "user@svc.test", "svc.test\\x"]) {
      const res = await exchange("/healthz", host);
      assert.equal(res.status, 400, host);
      assert.deepEqual(JSON.parse(res.body), { message: "The Host header must be a host name with an optional port" });
    }
    // Host names, ports, IP literals and HTTP/1.0 without Host are served as before.
    for (const host of ["svc.test", "SVC.test:8080", "127.0.0.1:80", "[::1]:8000", "my_service"]) {
      assert.equal((await exchange("/healthz", host)).status, 200, host);
    }
    assert.equal((await exchange("/healthz", null, "1.0")).status, 200);
    const refused = w.log.lines.filter((l) => l.msg === "request" && l.status === 400);
    assert.equal(refused.length, 4);
  } finally {
    await server.shutdown(1000);
  }
});
