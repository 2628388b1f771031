import assert from "node:assert/strict";
import { HttpProtocolError, pinnedHttp } from "../../core/net/pinned_http.ts";

/**
 * A raw TCP peer that answers every connection with `reply` bytes, then closes (or, with `holdOpen`,
 * waits for the client to close first); it records requests.
 */
function rawServer(reply: string | Uint8Array, { holdOpen = false } = {}) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const requests: string[] = [];
  const done = (async () => {
    for await (const conn of listener) {
      const buf = new Uint8Array(8192);
      const n = await conn.read(buf);
      requests.push(new TextDecoder().decode(buf.subarray(0, n ?? 0)));
      const bytes = typeof reply === "string" ? new TextEncoder().encode(reply) : reply;
      for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
      if (holdOpen) await conn.read(buf).catch(() => null);
      conn.close();
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    requests,
    async close() {
      listener.close();
      await done.catch(() => {});
    },
  };
}

async function get(port: number, headers: Record<string, string> = {}) {
  return await pinnedHttp({
    url: new URL(`http://pages.example.test:${port}/a/b?c=1`),
    address: "127.0.0.1",
    headers,
  });
}

Deno.test("pinnedHttp() sends one HTTP/1.1 GET with the URL's Host and reads a Content-Length body", async () => {
  // The peer keeps the connection open: the body must end at Content-Length, not at close.
  const s = rawServer("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello", {
    holdOpen: true,
  });
  try {
    const res = await get(s.port, { accept: "text/plain" });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "hello");
    const [requestLine, ...lines] = s.requests[0]!.split("\r\n");
    assert.equal(requestLine, "GET /a/b?c=1 HTTP/1.1");
    assert.ok(lines.includes(`Host: pages.example.test:${s.port}`));
    assert.ok(lines.some((l) => /^connection: close$/i.test(l)));
    assert.ok(lines.includes("accept: text/plain"));
  } finally {
    await s.close();
  }
});

Deno.test("pinnedHttp() decodes chunked bodies with extensions and trailers, after a 100 Continue", async () => {
  const s = rawServer(
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
      "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: yes\r\n\r\n",
  );
  try {
    const res = await get(s.port);
    assert.equal(await res.text(), "hello, world");
  } finally {
    await s.close();
  }
});

Deno.test("pinnedHttp() reads a close-delimited body and keeps repeated headers", async () => {
  const s = rawServer("HTTP/1.0 404 Not Found\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\nno length here");
  try {
    const res = await get(s.port);
    assert.equal(res.status, 404);
    assert.equal(res.statusText, "Not Found");
    assert.deepEqual(res.headers.getSetCookie(), ["a=1", "b=2"]);
    assert.equal(await res.text(), "no length here");
  } finally {
    await s.close();
  }
});

Deno.test("pinnedHttp() raises HttpProtocolError for malformed or truncated responses", async (t) => {
  const cases: Record<string, string> = {
    "garbage status line": "SSH-2.0-OpenSSH_9.6\r\n\r\n",
    "header without colon": "HTTP/1.1 200 OK\r\nbroken header\r\n\r\n",
    "oversized header": `HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(70_000)}\r\n\r\n`,
    "bad Content-Length": "HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\nx",
    "unsupported encoding": "HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\nx",
  };
  for (const [name, reply] of Object.entries(cases)) {
    await t.step(name, async () => {
      const s = rawServer(reply);
      try {
        await assert.rejects(get(s.port), HttpProtocolError);
      } finally {
        await s.close();
      }
    });
  }
  await t.step("body shorter than Content-Length", async () => {
    const s = rawServer("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort");
    try {
      const res = await get(s.port);
      await assert.rejects(res.text(), HttpProtocolError);
    } finally {
      await s.close();
    }
  });
  await t.step("connection closed inside a chunk", async () => {
    const s = rawServer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nff\r\nonly a little");
    try {
      const res = await get(s.port);
      await assert.rejects(res.text(), HttpProtocolError);
    } finally {
      await s.close();
    }
  });
});

Deno.test("pinnedHttp() refuses header values with line breaks (no request smuggling)", async () => {
  const s = rawServer("HTTP/1.1 204 No Content\r\n\r\n");
  try {
    await assert.rejects(get(s.port, { "x-test": "a\r\nHost: evil" }), TypeError);
    assert.equal((await get(s.port)).status, 204);
  } finally {
    await s.close();
  }
});
