/**
 * Agent identity from Web Bot Auth: requests signed by mppx's Web Bot Auth signer, with the key
 * directory served over TLS on 127.0.0.1 (a self-signed certificate the test trusts; the directory
 * is fetched through the SSRF-guarded fetcher, which allows loopback only in tests). A verified
 * agent is named by its directory host in agent readership; replays, foreign keys and a forged
 * Signature-Agent are counted as unverified, never under the claimed name.
 */
import assert from "node:assert/strict";
import { calculateJwkThumbprint, type JWK } from "jose";
import { Client } from "mppx/attestation/web-bot-auth";
import { memoryLogger } from "../../core/log.ts";
import { DIRECTORY_PATH, DIRECTORY_TYPE, KeyDirectories } from "../../core/web_bot_auth/directory.ts";
import { kvNonceStore } from "../../core/web_bot_auth/nonce_store.ts";
import { SIGNATURE_CLOCK_SKEW_S, WebBotAuth } from "../../core/web_bot_auth/verifier.ts";
import { bearer } from "../_helpers.ts";
import { loopbackFetcher, serveTls } from "../_tls.ts";
import { hoursAgo, searchWorld } from "../search/_world.ts";

const BOT_HOST = "bots.example.test";

/** An Ed25519 bot key: the private half signs, the public JWK goes in the directory. */
async function botKey() {
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]) as CryptoKeyPair;
  const jwk = await crypto.subtle.exportKey("jwk", pair.publicKey) as JWK;
  return { privateKey: pair.privateKey, jwk, keyId: await calculateJwkThumbprint(jwk, "sha256") };
}

/** The bot's key directory over TLS on 127.0.0.1; counts its fetches. */
async function startDirectory(keys: JWK[]) {
  const seen = { fetches: 0 };
  const server = await serveTls(BOT_HOST, (req) => {
    if (new URL(req.url).pathname !== DIRECTORY_PATH) return new Response("not found", { status: 404 });
    seen.fetches++;
    return new Response(JSON.stringify({ keys }), { headers: { "content-type": DIRECTORY_TYPE } });
  });
  return { ...server, seen };
}

Deno.test("Web Bot Auth: a verified agent is named by its directory host; replayed, foreign-key and forged signatures count as unverified", async () => {
  const bot = await botKey();
  const impostor = await botKey();
  const directory = await startDirectory([bot.jwk]);
  try {
    await using w = await searchWorld({ overrides: { safeFetch: loopbackFetcher(directory.cert) } });
    await w.deps.search.ingest(w.dm, [{
      url: "https://alpha.example/rates",
      title: "Central bank holds rates",
      body: "The central bank kept interest rates unchanged as inflation cooled.",
      pubdate: hoursAgo(w, 3),
    }]);
    const request = () =>
      new Request(`http://svc.test/app/v2/search?data_model_id=${w.dm.id}`, {
        method: "POST",
        headers: { ...bearer(w.key), "content-type": "application/json" },
        body: JSON.stringify({ query: "interest rates" }),
      });
    const signer = Client.signer({ key: bot.privateKey, keyId: bot.keyId, signatureAgent: directory.origin });
    const send = async (req: Request) => {
      const res = await w.app.request(req);
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
    };

    // Without a good API key the signature is not even looked at: no directory fetch.
    const anonymous = await signer.sign(
      new Request(request(), { headers: { "content-type": "application/json", authorization: "Bearer ak_nope" } }),
    );
    const refused = await w.app.request(anonymous);
    assert.ok(refused.status === 401 || refused.status === 403, String(refused.status));
    await refused.body?.cancel();
    assert.equal(directory.seen.fetches, 0);

    // Verified: twice, with fresh signatures (one directory fetch, cached).
    await send(await signer.sign(request()));
    const signed = await signer.sign(request());
    const replay = signed.clone();
    await send(signed);
    assert.equal(directory.seen.fetches, 1);
    // Replayed: the same nonce again.
    await send(replay);
    // A key not in the directory, claiming the same directory.
    await send(
      await Client.signer({ key: impostor.privateKey, keyId: impostor.keyId, signatureAgent: directory.origin })
        .sign(request()),
    );
    // A valid signature whose Signature-Agent was swapped for another name afterwards.
    const forged = await signer.sign(request());
    const headers = new Headers(forged.headers);
    headers.set("signature-agent", `webbot="https://famous-ai.example"`);
    await send(new Request(forged, { headers }));
    // An unsigned request that only claims a directory.
    const claimOnly = request();
    claimOnly.headers.set("signature-agent", `webbot="https://famous-ai.example"`);
    await send(claimOnly);
    // Unsigned: no agent identity (the tenant's own traffic).
    await send(request());

    // MCP with the tenant key: a signed tools/call is the same verified agent.
    const mcp = await w.app.request(
      await signer.sign(
        new Request("http://svc.test/mcp", {
          method: "POST",
          headers: {
            ...bearer(w.key),
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
          },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name: "search_articles", arguments: { data_model_id: w.dm.id, query: "interest rates" } },
          }),
        }),
      ),
    );
    assert.equal(mcp.status, 200, await mcp.clone().text());
    assert.equal((await mcp.json()).result?.isError, undefined);

    await w.deps.events.stop();
    const res = await w.app.request("/v1/analytics/agents", { headers: bearer(w.key) });
    assert.equal(res.status, 200);
    const agents = (await res.json()).agents as Record<string, unknown>[];
    const byName = new Map(agents.map((a) => [a.agent_identity, a]));
    const host = new URL(directory.origin).host;
    assert.deepEqual([...byName.keys()].sort(), ["webbot-unverified", `webbot:${host}`]);
    const verified = byName.get(`webbot:${host}`)!;
    assert.equal(verified.verified, true);
    assert.equal(verified.directory_host, host);
    assert.equal(verified.channel, "webbot");
    assert.equal(verified.searches, 3);
    const unverified = byName.get("webbot-unverified")!;
    assert.equal(unverified.verified, false);
    assert.equal(unverified.directory_host, null);
    assert.equal(unverified.searches, 4);
    assert.ok(!JSON.stringify(agents).includes("famous-ai"), "a claimed name is never recorded");
  } finally {
    await directory.close();
  }
});

Deno.test("KeyDirectories: a directory on a private address is not fetched without the allowance", async () => {
  const bot = await botKey();
  const directory = await startDirectory([bot.jwk]);
  try {
    const dirs = new KeyDirectories({ fetcher: loopbackFetcher(directory.cert, false), log: memoryLogger() });
    assert.equal(await dirs.resolve(directory.origin, bot.keyId, "ed25519"), undefined);
    assert.equal(directory.seen.fetches, 0);
    const allowed = new KeyDirectories({ fetcher: loopbackFetcher(directory.cert), log: memoryLogger() });
    const key = await allowed.resolve(directory.origin, bot.keyId, "ed25519");
    assert.ok(key);
    assert.equal(key.extractable, true);
    // An unknown key id, or an algorithm the key is not for: nothing.
    assert.equal(await allowed.resolve(directory.origin, "A".repeat(43), "ed25519"), undefined);
    assert.equal(await allowed.resolve(directory.origin, bot.keyId, "rsa-pss-sha512"), undefined);
  } finally {
    await directory.close();
  }
});

Deno.test("kvNonceStore().tryClaim() takes a nonce once until it expires, then it may be claimed again", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    let now = 1_000_000;
    const store = kvNonceStore(kv, () => now);
    assert.equal(await store.tryClaim!("web-bot-auth:k:n1", now + 60_000), true);
    assert.equal(await store.tryClaim!("web-bot-auth:k:n1", now + 60_000), false);
    assert.equal(await store.tryClaim!("web-bot-auth:k:n2", now + 60_000), true);
    now += 60_001;
    assert.equal(await store.tryClaim!("web-bot-auth:k:n1", now + 60_000), true);
    // Concurrent claims of one nonce: exactly one wins.
    const wins = await Promise.all(Array.from({ length: 20 }, () => store.tryClaim!("web-bot-auth:k:n3", now + 1000)));
    assert.equal(wins.filter(Boolean).length, 1);
  } finally {
    kv.close();
  }
});

Deno.test("Web Bot Auth: a signature made for another site's authority, replayed here under that Host, is unverified", async () => {
  const bot = await botKey();
  const directory = await startDirectory([bot.jwk]);
  try {
    await using w = await searchWorld({ overrides: { safeFetch: loopbackFetcher(directory.cert) } });
    await w.deps.search.ingest(w.dm, [{
      url: "https://alpha.example/rates",
      title: "Central bank holds rates",
      body: "The central bank kept interest rates unchanged as inflation cooled.",
      pubdate: hoursAgo(w, 3),
    }]);
    const signer = Client.signer({ key: bot.privateKey, keyId: bot.keyId, signatureAgent: directory.origin });
    // What the bot sent to a site that keeps its headers: the profile covers `@authority` and
    // `Signature-Agent`, nothing of the path, so the captured headers fit any request to that host.
    const captured = await signer.sign(new Request("https://capturing-site.example/some/page"));
    const replayHeaders = (authority: string) => {
      const headers = new Headers({ ...bearer(w.key), "content-type": "application/json" });
      for (const name of ["signature", "signature-input", "signature-agent"]) {
        headers.set(name, captured.headers.get(name)!);
      }
      return new Request(`http://${authority}/app/v2/search?data_model_id=${w.dm.id}`, {
        method: "POST",
        headers,
        body: JSON.stringify({ query: "interest rates" }),
      });
    };
    // Replayed with that site's Host (what `Deno.serve` builds the URL from): not ours.
    const replayed = await w.app.request(replayHeaders("capturing-site.example"));
    assert.equal(replayed.status, 200, await replayed.clone().text());
    await replayed.body?.cancel();
    // The bot's own signature for our host still names it.
    const own = await w.app.request(
      await signer.sign(
        new Request(`http://svc.test/app/v2/search?data_model_id=${w.dm.id}`, {
          method: "POST",
          headers: { ...bearer(w.key), "content-type": "application/json" },
          body: JSON.stringify({ query: "interest rates" }),
        }),
      ),
    );
    assert.equal(own.status, 200);
    await own.body?.cancel();

    await w.deps.events.stop();
    const res = await w.app.request("/v1/analytics/agents", { headers: bearer(w.key) });
    const agents = (await res.json()).agents as Record<string, unknown>[];
    const searches = Object.fromEntries(agents.map((a) => [a.agent_identity, a.searches]));
    const host = new URL(directory.origin).host;
    assert.deepEqual(searches, { [`webbot:${host}`]: 1, "webbot-unverified": 1 });
  } finally {
    await directory.close();
  }
});

Deno.test("WebBotAuth.identify() allows a signer's clock SIGNATURE_CLOCK_SKEW_S ahead, on created only", async () => {
  assert.equal(SIGNATURE_CLOCK_SKEW_S, 5);
  const bot = await botKey();
  const directory = await startDirectory([bot.jwk]);
  const kv = await Deno.openKv(":memory:");
  try {
    // Our clock, injected: the verifier judges by it, not by the wall clock mppx reads.
    const nowMs = Date.now() - 30_000;
    const nowS = Math.floor(nowMs / 1000);
    // The wall clock as our own code sees it when the directory is fetched.
    const fetchedAt: number[] = [];
    const loopback = loopbackFetcher(directory.cert);
    const fetcher = Object.assign(Object.create(loopback), {
      fetch: (...args: Parameters<typeof loopback.fetch>) => (fetchedAt.push(Date.now()), loopback.fetch(...args)),
    });
    const auth = new WebBotAuth({
      kv,
      fetcher,
      log: memoryLogger(),
      signatureClockMs: () => nowMs,
      isOwnAuthority: () => true,
    });
    const signed = (created: number, expiresIn = 60) =>
      Client.signer({ key: bot.privateKey, keyId: bot.keyId, signatureAgent: directory.origin, expiresIn })
        .sign(new Request("http://svc.test/app/v2/search", { method: "POST" }), {
          created,
          nonce: crypto.randomUUID().replaceAll("-", ""),
        });
    const status = async (req: Request) => (await auth.identify(req)).status;

    assert.equal(await status(await signed(nowS)), "verified");
    // A signer 2 s ahead: verified, once (its nonce is still single-use).
    const ahead = await signed(nowS + 2);
    assert.equal(await status(ahead.clone()), "verified");
    assert.equal(await status(ahead), "unverified");
    assert.equal(await status(await signed(nowS + SIGNATURE_CLOCK_SKEW_S)), "verified");
    // Past the tolerance: refused.
    assert.equal(await status(await signed(nowS + SIGNATURE_CLOCK_SKEW_S + 1)), "unverified");
    assert.equal(await status(await signed(nowS + 60)), "unverified");
    // The tolerance is not given to expires: expired by a second, or made ahead with a lifetime of
    // less than the skew and expired here, still refused.
    assert.equal(await status(await signed(nowS - 61)), "unverified");
    assert.equal(await status(await signed(nowS - 60)), "unverified");
    assert.equal(await status(await signed(nowS - 59)), "verified");
    // Ahead, but its lifetime too long: refused.
    assert.equal(await status(await signed(nowS + 2, 301)), "unverified");
    // The wall clock is lent to mppx's check only: not to our directory fetch, nor after.
    assert.equal(fetchedAt.length, 1);
    assert.ok(Math.abs(fetchedAt[0]! - nowMs - 30_000) < 10_000, "the directory fetch saw the wall clock");
    assert.ok(Math.abs(Date.now() - nowMs - 30_000) < 10_000);
  } finally {
    kv.close();
    await directory.close();
  }
});
