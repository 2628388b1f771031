import assert from "node:assert/strict";
import { senderNetwork } from "../../core/client_key.ts";
import { FixedClock } from "../../core/clock.ts";
import { FixedWindowLimiter } from "../../core/rate_limit.ts";
import { ClickGate, isNonReaderAgent } from "../../core/links/click_gate.ts";

Deno.test("isNonReaderAgent() names crawlers, link previews and command-line clients, not browsers", () => {
  for (
    const ua of [
      "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
      "Slack-ImgProxy (+https://api.slack.com/robots)",
      "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
      "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
      "WhatsApp/2.23.20.0",
      "curl/8.5.0",
      "python-requests/2.32.3",
      "Go-http-client/1.1",
      "Mozilla/5.0 (compatible; SomeNewBot/0.1; +https://example.com/bot)",
    ]
  ) assert.equal(isNonReaderAgent(ua), true, ua);
  for (
    const ua of [
      undefined,
      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
      "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 Version/17.1 Mobile Safari/604.1",
      "Mozilla/5.0 (Linux; Android 9; CUBOT P30) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36",
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0 Safari/537.36",
    ]
  ) assert.equal(isNonReaderAgent(ua), false, String(ua));
});

Deno.test("ClickGate: concurrent follows of one link from one address in two processes count once", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const clock = new FixedClock("2026-11-22T12:00:00Z");
    const gate = () =>
      new ClickGate({
        kv,
        clock,
        perAddress: new FixedWindowLimiter(kv, clock, { scope: "c", limit: 1000, windowS: 60 }),
        dedupeWindowS: 1800,
        linkTtlS: 86_400,
      });
    const [a, b] = [gate(), gate()];
    const click = { dataModelId: "dm_1", articleId: "ar_1", url: "https://x.example/", issuedAt: 1795348800 };
    const req = { method: "GET", address: "203.0.113.1", token: "k.p.m" };
    const verdicts = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).verdict(click, req)));
    assert.equal(verdicts.filter((v) => v === "counted").length, 1);
    assert.equal(verdicts.filter((v) => v === "duplicate").length, 39);
    assert.equal(await a.verdict(click, { ...req, method: "HEAD" }), "not_get");
    assert.equal(await a.verdict({ ...click, expiresAt: 1795348799 }, { ...req, address: "203.0.113.2" }), "expired");
  } finally {
    kv.close();
  }
});

Deno.test("senderNetwork(): an IPv4 address is itself, an IPv6 address its /64, anything else none", () => {
  assert.equal(senderNetwork("203.0.113.7"), "203.0.113.7");
  assert.equal(senderNetwork("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  assert.equal(senderNetwork("2001:0db8:0001:0002:ffff:0:0:9"), "2001:db8:1:2::/64");
  assert.equal(senderNetwork("[2001:db8::1]"), "2001:db8:0:0::/64");
  assert.equal(senderNetwork("::ffff:198.51.100.4"), "198.51.100.4");
  assert.equal(senderNetwork("unknown"), null);
});
