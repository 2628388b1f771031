import assert from "node:assert/strict";
import { classifyIp } from "../../core/net/ip.ts";
import { addressPolicy } from "../../core/net/ip.ts";
import { SafeFetcher, SafeFetchError, type SafeFetchErrorCode } from "../../core/net/safe_fetch.ts";
import { startServer } from "../../routes/server.ts";
import { selfSignedCertificate } from "../_tls.ts";

async function rejectsWith(p: Promise<unknown>, code: SafeFetchErrorCode): Promise<SafeFetchError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof SafeFetchError, `expected SafeFetchError, got ${err}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected ${code}`);
}

const HTML = "text/html";

Deno.test("classifyIp() sorts special-purpose addresses and lets public ones through", () => {
  const cases: Record<string, string | null> = {
    "127.0.0.1": "loopback",
    "10.1.2.3": "private",
    "172.16.0.1": "private",
    "172.31.255.255": "private",
    "172.32.0.1": null,
    "192.168.1.1": "private",
    "169.254.169.254": "link_local",
    "100.64.0.1": "shared",
    "100.128.0.1": null,
    "0.0.0.0": "unspecified",
    "224.0.0.1": "multicast",
    "255.255.255.255": "reserved",
    "93.184.216.34": null,
    "::": "unspecified",
    "::1": "loopback",
    "fc00::1": "unique_local",
    "fd12:3456::1": "unique_local",
    "fe80::1": "link_local",
    "ff02::1": "multicast",
    "::ffff:127.0.0.1": "loopback",
    "::ffff:7f00:1": "loopback",
    "::ffff:169.254.169.254": "link_local",
    "::ffff:93.184.216.34": null,
    "64:ff9b::10.0.0.1": "private",
    "2002:a9fe:a9fe::1": "link_local",
    "2606:4700::1111": null,
    "not-an-ip": "not_an_ip",
  };
  for (const [ip, want] of Object.entries(cases)) assert.equal(classifyIp(ip), want, ip);
});

Deno.test("SafeFetcher.check() refuses blocked addresses in every spelling", async (t) => {
  const fetcher = new SafeFetcher();
  const blocked = [
    "http://127.0.0.1/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://127.1/",
    "http://10.0.0.5/",
    "http://172.16.3.4/",
    "http://192.168.0.10:8080/",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.64.1.1/",
    "http://0.0.0.0/",
    "http://224.0.0.1/",
    "http://[::1]/",
    "http://[fc00::1]/",
    "http://[fe80::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.GOOGLE.INTERNAL./",
    "http://localhost:8000/",
  ];
  for (const url of blocked) {
    await t.step(url, async () => {
      await rejectsWith(fetcher.check(url), "blocked_address");
    });
  }
  await t.step("non-http schemes and credentials are invalid_url", async () => {
    for (
      const url of ["file:///etc/passwd", "ftp://example.com/", "gopher://x/", "not a url", "http://u:p@example.com/"]
    ) {
      await rejectsWith(fetcher.check(url), "invalid_url");
    }
  });
});

Deno.test("SafeFetcher.check() refuses a name when any resolved address is blocked", async () => {
  const fetcher = new SafeFetcher({ resolver: () => Promise.resolve(["93.184.216.34", "10.0.0.1"]) });
  const err = await rejectsWith(fetcher.check("http://mixed.example.test/"), "blocked_address");
  assert.equal(err.reason, "private");
  const ok = new SafeFetcher({ resolver: () => Promise.resolve(["93.184.216.34"]) });
  assert.deepEqual((await ok.check("http://public.example.test/")).addresses, ["93.184.216.34"]);
  const none = new SafeFetcher({ resolver: () => Promise.resolve([]) });
  await rejectsWith(none.check("http://nowhere.example.test/"), "unreachable");
});

Deno.test("SafeFetcher.fetch() with allowPrivate reads a local page and keeps metadata blocked", async (t) => {
  const server = startServer((req) => {
    const path = new URL(req.url).pathname;
    if (path === "/page") {
      return new Response("<html><body>Hello</body></html>", {
        headers: { "content-type": "text/html; charset=utf-8" },
      });
    }
    if (path === "/to-metadata") return Response.redirect("http://169.254.169.254/latest/meta-data/", 302);
    if (path === "/to-page") return new Response(null, { status: 301, headers: { location: "/page" } });
    if (path === "/loop") return new Response(null, { status: 302, headers: { location: "/loop" } });
    if (path === "/missing") return new Response("nope", { status: 404, headers: { "content-type": "text/html" } });
    if (path === "/pdf") return new Response("%PDF-1.7", { headers: { "content-type": "application/pdf" } });
    return new Response("?", { status: 500 });
  });
  const fetcher = new SafeFetcher({ allowPrivate: true });
  try {
    await t.step("reads the page with its charset", async () => {
      const r = await fetcher.fetch(`${server.url}/page`, { accept: [HTML] });
      assert.equal(r.status, 200);
      assert.equal(r.contentType, "text/html");
      assert.equal(r.charset, "utf-8");
      assert.equal(new TextDecoder().decode(r.body), "<html><body>Hello</body></html>");
    });
    await t.step("follows a relative redirect and reports the final URL", async () => {
      const r = await fetcher.fetch(`${server.url}/to-page`, { accept: [HTML] });
      assert.equal(r.url, `${server.url}/page`);
      assert.deepEqual(r.redirects, [`${server.url}/to-page`]);
    });
    await t.step("a redirect to 169.254.169.254 is blocked although private addresses are allowed", async () => {
      await rejectsWith(fetcher.fetch(`${server.url}/to-metadata`, { accept: [HTML] }), "blocked_address");
    });
    await t.step("redirect loops stop after maxRedirects", async () => {
      await rejectsWith(fetcher.fetch(`${server.url}/loop`, { accept: [HTML] }), "too_many_redirects");
    });
    await t.step("non-2xx is bad_status with the status", async () => {
      const err = await rejectsWith(fetcher.fetch(`${server.url}/missing`, { accept: [HTML] }), "bad_status");
      assert.equal(err.status, 404);
    });
    await t.step("a content type outside the allow-list is refused", async () => {
      await rejectsWith(fetcher.fetch(`${server.url}/pdf`, { accept: [HTML] }), "unsupported_content_type");
      const r = await fetcher.fetch(`${server.url}/pdf`, { accept: ["application/*"] });
      assert.equal(r.contentType, "application/pdf");
    });
    await t.step("without allowPrivate the same server is blocked", async () => {
      await rejectsWith(new SafeFetcher().fetch(`${server.url}/page`, { accept: [HTML] }), "blocked_address");
    });
  } finally {
    await server.shutdown();
  }
});

Deno.test("SafeFetcher.fetch() connects to the checked address and re-checks a redirect to another name", async () => {
  const seen: string[] = [];
  const server = startServer((req) => {
    seen.push(req.headers.get("host") ?? "");
    const path = new URL(req.url).pathname;
    if (path === "/hop") {
      return new Response(null, { status: 302, headers: { location: `http://internal.example.test:${port}/secret` } });
    }
    return new Response("<p>ok</p>", { headers: { "content-type": "text/html" } });
  });
  const port = server.port;
  // "pages.example.test" is treated as a public host resolving to 127.0.0.1; "internal.example.test"
  // resolves to a private address, which the default policy refuses.
  const resolver = (host: string) =>
    Promise.resolve(
      host === "pages.example.test" ? ["127.0.0.1"] : host === "internal.example.test" ? ["10.0.0.7"] : [],
    );
  const base = addressPolicy();
  const fetcher = new SafeFetcher({ resolver, policy: (ip) => (ip === "127.0.0.1" ? null : base(ip)) });
  try {
    const r = await fetcher.fetch(`http://pages.example.test:${port}/article`, { accept: [HTML] });
    assert.equal(r.status, 200);
    assert.equal(seen.at(-1), `pages.example.test:${port}`, "Host header keeps the original name");
    const err = await rejectsWith(
      fetcher.fetch(`http://pages.example.test:${port}/hop`, { accept: [HTML] }),
      "blocked_address",
    );
    assert.equal(err.reason, "private");
    assert.deepEqual(
      seen,
      [`pages.example.test:${port}`, `pages.example.test:${port}`],
      "the private host was never contacted",
    );
  } finally {
    await server.shutdown();
  }
});

Deno.test("SafeFetcher.fetch() enforces the deadline on a server that never answers", async () => {
  let release!: () => void;
  const hold = new Promise<void>((r) => (release = r));
  const server = startServer(async () => {
    await hold;
    return new Response("late", { headers: { "content-type": "text/html" } });
  });
  const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 150 });
  try {
    const started = performance.now();
    const err = await rejectsWith(fetcher.fetch(`${server.url}/slow`, { accept: [HTML] }), "timeout");
    assert.match(err.message, /150 ms/);
    assert.ok(performance.now() - started < 2000);
  } finally {
    release();
    await server.shutdown();
  }
});

Deno.test("SafeFetcher.fetch() caps the body size whether declared or streamed", async () => {
  const big = new Uint8Array(3 * 1024 * 1024).fill(97);
  const server = startServer((req) => {
    const path = new URL(req.url).pathname;
    if (path === "/declared") return new Response(big, { headers: { "content-type": "text/html" } });
    // A streamed body has no Content-Length: the cap must stop it while it arrives.
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 48; i++) c.enqueue(big.subarray(0, 64 * 1024));
        c.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/html" } });
  });
  const fetcher = new SafeFetcher({ allowPrivate: true });
  try {
    await rejectsWith(fetcher.fetch(`${server.url}/declared`, { accept: [HTML] }), "too_large");
    await rejectsWith(fetcher.fetch(`${server.url}/streamed`, { accept: [HTML] }), "too_large");
    const r = await fetcher.fetch(`${server.url}/streamed`, { accept: [HTML], maxBytes: 4 * 1024 * 1024 });
    assert.equal(r.body.length, 48 * 64 * 1024);
  } finally {
    await server.shutdown();
  }
});

Deno.test("SafeFetcher.fetch() decodes a gzip body and caps the decoded size", async () => {
  const text = "<p>" + "compressible ".repeat(5000) + "</p>";
  const gz = new Uint8Array(
    await new Response(new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer(),
  );
  const server = startServer(() =>
    new Response(gz, { headers: { "content-type": "text/html", "content-encoding": "gzip" } })
  );
  try {
    const r = await new SafeFetcher({ allowPrivate: true }).fetch(server.url, { accept: [HTML] });
    assert.equal(new TextDecoder().decode(r.body), text);
    await rejectsWith(
      new SafeFetcher({ allowPrivate: true }).fetch(server.url, { accept: [HTML], maxBytes: 10_000 }),
      "too_large",
    );
  } finally {
    await server.shutdown();
  }
});

Deno.test("SafeFetcher.fetch() speaks TLS to the pinned address with the URL's host name", async () => {
  const { cert, key } = await selfSignedCertificate("secure.example.test");
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert, key, onListen() {} },
    (req) => new Response(`host=${req.headers.get("host")}`, { headers: { "content-type": "text/plain" } }),
  );
  const port = server.addr.port;
  const resolver = () => Promise.resolve(["127.0.0.1"]);
  try {
    const fetcher = new SafeFetcher({ allowPrivate: true, resolver, caCerts: [cert] });
    const r = await fetcher.fetch(`https://secure.example.test:${port}/`, { accept: ["text/plain"] });
    assert.equal(new TextDecoder().decode(r.body), `host=secure.example.test:${port}`);
    // A name the certificate does not cover fails verification: the pinned IP does not weaken TLS.
    await rejectsWith(
      fetcher.fetch(`https://other.example.test:${port}/`, { accept: ["text/plain"] }),
      "unreachable",
    );
  } finally {
    await server.shutdown();
  }
});
