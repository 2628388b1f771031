import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../core/config.ts";

Deno.test("parseConfig() defaults for outbound fetches and images", () => {
  const c = parseConfig({});
  assert.equal(c.allowPrivateUrls, false);
  assert.equal(c.fetchTimeoutMs, 5000);
  assert.equal(c.fetchMaxBytes, 2 * 1024 * 1024);
  assert.equal(c.imageMaxBytes, 10 * 1024 * 1024);
  assert.equal(c.imageMaxDimension, 2048);
  assert.equal(c.imageCacheMaxBytes, 1024 * 1024 * 1024);
  assert.equal(parseConfig({ ALLOW_PRIVATE_URLS: "true" }).allowPrivateUrls, true);
});

Deno.test("parseConfig() names a bad fetch or image variable", () => {
  for (
    const [name, value] of [
      ["ALLOW_PRIVATE_URLS", "sometimes"],
      ["FETCH_TIMEOUT_MS", "0"],
      ["FETCH_MAX_BYTES", "12"],
      ["IMAGE_MAX_BYTES", "lots"],
      ["IMAGE_MAX_DIMENSION", "8"],
      ["IMAGE_CACHE_MAX_BYTES", "-1"],
    ]
  ) {
    assert.throws(() => parseConfig({ [name!]: value! }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, new RegExp(`^Invalid configuration: ${name}\\b`));
      return true;
    });
  }
});
