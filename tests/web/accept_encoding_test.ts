import assert from "node:assert/strict";
import { acceptsGzip } from "../../routes/analytics/dashboard/assets.ts";

Deno.test("acceptsGzip() weighs Accept-Encoding by RFC 9110 12.5.3", async (t) => {
  const cases: [string | undefined, boolean, string][] = [
    [undefined, false, "no header: the uncompressed bytes"],
    ["", false, "an empty value asks for no coding"],
    ["gzip", true, "listed"],
    ["GZIP;Q=1", true, "names and parameters are case-insensitive"],
    ["x-gzip", true, "x-gzip is gzip"],
    ["gzip, deflate, br", true, "a browser's list"],
    ["br;q=1.0, gzip;q=0.8, *;q=0.1", true, "weighted below another coding, still above identity"],
    ["gzip;q=0.5", true, "any weight above 0 accepts"],
    ["gzip ; q=0.001", true, "whitespace around the parameter"],
    ["*", true, "* accepts gzip"],
    ["gzip;q=0", false, "q=0 refuses"],
    ["gzip;q=0.000", false, "q=0.000 refuses"],
    ["gzip;q=0, *", false, "an explicit refusal outweighs *"],
    ["*, gzip;q=0", false, "in any order"],
    ["*;q=0", false, "*;q=0 refuses every coding not listed"],
    ["*;q=0, identity", false, "identity alone"],
    ["deflate, br", false, "gzip not listed"],
    ["gzip, gzip;q=0", false, "listed twice: the refusal stands"],
    ["gzip;q=0.5, identity", false, "the client weighs identity above gzip"],
    ["gzip;q=0.5, identity;q=0.5", true, "a tie goes to the smaller bytes"],
    ["identity;q=0, gzip;q=0.1", true, "identity refused, gzip the only choice"],
    ["*;q=0.5, gzip;q=0.3", false, "* weighs identity above gzip"],
    ["gzip;q=2", false, "a weight above 1 is malformed: the entry counts as absent"],
    ["gzip;q=abc, *", true, "a malformed entry is absent, * speaks"],
    ["gzip;q=0.5000", false, "more than three decimals is malformed"],
  ];
  for (const [header, expected, why] of cases) {
    await t.step(`${JSON.stringify(header)}: ${why}`, () => assert.equal(acceptsGzip(header), expected));
  }
});

Deno.test("GET /widget/v1/loader.js: Accept-Encoding 'gzip;q=0, *' gets the uncompressed script", async () => {
  const { createTestWorld } = await import("../_helpers.ts");
  await using w = await createTestWorld();
  const refused = await w.app.request("/widget/v1/loader.js", { headers: { "accept-encoding": "gzip;q=0, *" } });
  assert.equal(refused.status, 200);
  assert.equal(refused.headers.get("content-encoding"), null);
  assert.equal(refused.headers.get("vary"), "Accept-Encoding");
  assert.match(await refused.text(), /\/widget\/v1\/assets\/widget\.[0-9a-f]{16}\.js/);
  const taken = await w.app.request("/widget/v1/loader.js", { headers: { "accept-encoding": "gzip;q=0.5, *;q=0.1" } });
  assert.equal(taken.headers.get("content-encoding"), "gzip");
  await taken.body?.cancel();
});
