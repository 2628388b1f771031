import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../core/config.ts";

Deno.test("parseConfig() gives every default on an empty environment", () => {
  const c = parseConfig({});
  assert.equal(c.port, 8000);
  assert.equal(c.host, "127.0.0.1");
  assert.equal(c.dataDir, "./data");
  assert.equal(c.kvPath, "./data/kv.sqlite3");
  assert.equal(c.baseUrl, "http://127.0.0.1:8000");
  assert.equal(c.agentAuthUrl, "http://127.0.0.1:8000");
  assert.equal(c.networkApiUrl, "http://127.0.0.1:8000/network");
  assert.equal(c.duckdbAllocatorFlush, "4MB");
  assert.equal(c.maxBodyBytes, 1048576);
  assert.equal(c.demoSeed, true);
  assert.equal(c.logLevel, "info");
});

Deno.test("parseConfig() derives the KV path from DATA_DIR and keeps explicit values", () => {
  const c = parseConfig({ DATA_DIR: "/srv/data/", KV_PATH: "", BASE_URL: "https://api.example.com/", DEMO_SEED: "0" });
  assert.equal(c.kvPath, "/srv/data/kv.sqlite3");
  assert.equal(c.baseUrl, "https://api.example.com");
  assert.equal(c.demoSeed, false);
  assert.equal(parseConfig({ KV_PATH: ":memory:" }).kvPath, ":memory:");
  assert.equal(parseConfig({ KV_PATH: "https://kv.example.com/db" }).kvPath, "https://kv.example.com/db");
});

Deno.test("parseConfig() names the bad variable in one line for each bad value", async (t) => {
  const cases: [Record<string, string>, string][] = [
    [{ PORT: "abc" }, "PORT"],
    [{ PORT: "70000" }, "PORT"],
    [{ HOST: " " }, "HOST"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    [{ BASE_URL: "ftp://x" }, "BASE_URL"],
    [{ AGENT_AUTH_URL: "not a url" }, "AGENT_AUTH_URL"],
    [{ NETWORK_API_URL: "localhost:8000" }, "NETWORK_API_URL"],
    [{ MAX_BODY_BYTES: "10" }, "MAX_BODY_BYTES"],
    [{ DEMO_SEED: "maybe" }, "DEMO_SEED"],
    [{ SHUTDOWN_TIMEOUT_S: "-1" }, "SHUTDOWN_TIMEOUT_S"],
    [{ BODY_READ_FLOOR_S: "0" }, "BODY_READ_FLOOR_S"],
    [{ BODY_MIN_BYTES_PER_S: "0" }, "BODY_MIN_BYTES_PER_S"],
    [{ EVENTS_WAL_TENANT_SHARE_PCT: "0" }, "EVENTS_WAL_TENANT_SHARE_PCT"],
    [{ DUCKDB_THREADS: "0" }, "DUCKDB_THREADS"],
    [{ DUCKDB_MEMORY_LIMIT: "lots" }, "DUCKDB_MEMORY_LIMIT"],
    [{ DUCKDB_ALLOCATOR_FLUSH: "4 MB; SET x" }, "DUCKDB_ALLOCATOR_FLUSH"],
  ];
  for (const [env, name] of cases) {
    await t.step(`${name}=${Object.values(env)[0]}`, () => {
      assert.throws(() => parseConfig(env), (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, new RegExp(`^Invalid configuration: ${name}\\b`));
        assert.ok(!err.message.includes("\n"), "one line");
        return true;
      });
    });
  }
});

Deno.test("parseConfig() says the rule a bad value breaks for every variable, never a bare 'Invalid input'", async () => {
  const source = (await Deno.readTextFile(new URL("../../core/config.ts", import.meta.url))) +
    (await Deno.readTextFile(new URL("../../core/payment_config.ts", import.meta.url)));
  const names = [...new Set([...source.matchAll(/^ {2}([A-Z][A-Z0-9_]+): /gm)].map((m) => m[1]!))];
  assert.ok(names.length > 50, "the schema's keys were found");
  const vague: string[] = [];
  for (const name of names) {
    for (const bad of ["not a value", "-1"]) {
      try {
        parseConfig({ [name]: bad });
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        if (/invalid input/i.test(err.message)) vague.push(`${name}: ${err.message}`);
      }
    }
  }
  assert.deepEqual(vague, []);
});

Deno.test("parseConfig() never echoes a value in its error", () => {
  assert.throws(
    () => parseConfig({ BASE_URL: "secret-value-123" }),
    (err: Error) => !err.message.includes("secret-value-123"),
  );
});

Deno.test("parseConfig() refuses plain http for URLs that vouch for identities or money, except on this machine", async (t) => {
  // A key set, a chain node, a facilitator or Stripe's API reached over http: whoever is on the path
  // serves their own signing key (any e-mail, born claimed), confirms a payment that never settled,
  // or reads the Stripe secret key.
  const issuers = (jwks: string) => JSON.stringify([{ issuer: "https://idp.example", jwks_url: jwks }]);
  const cases: [string, (url: string) => Record<string, string>][] = [
    ["TRUSTED_ISSUERS", (url) => ({ TRUSTED_ISSUERS: issuers(url) })],
    ["PAY_EVM_RPC_URL", (url) => ({ PAY_EVM_RPC_URL: url })],
    ["PAY_X402_FACILITATOR_URL", (url) => ({ PAY_X402_FACILITATOR_URL: url })],
    ["PAY_STRIPE_API_URL", (url) => ({ PAY_STRIPE_API_URL: url })],
  ];
  for (const [name, env] of cases) {
    await t.step(name, () => {
      for (const remote of ["http://idp.example/jwks", "http://10.0.0.7:8545", "http://LOCALHOST.example"]) {
        assert.throws(() => parseConfig(env(remote)), (err: unknown) => {
          assert.ok(err instanceof ConfigError);
          assert.match(err.message, new RegExp(`^Invalid configuration: ${name}\\b.*https`));
          assert.ok(!err.message.includes(remote), "the value is not echoed");
          return true;
        });
      }
      for (
        const ok of ["https://idp.example/jwks", "http://127.0.0.1:4021", "http://localhost:8545", "http://[::1]:9"]
      ) {
        parseConfig(env(ok));
      }
    });
  }
});
