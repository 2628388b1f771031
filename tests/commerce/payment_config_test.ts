/**
 * The PAY_* settings of mppx's standard methods: each method is offered only when fully configured,
 * and bad values are refused at startup with a message naming the variable, never echoing it.
 */
import assert from "node:assert/strict";
import { parseConfig } from "../../core/config.ts";

const evmEnv = {
  PAY_EVM_CHAIN_ID: "31337",
  PAY_EVM_TOKEN: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
  PAY_EVM_RECIPIENT: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
  PAY_X402_FACILITATOR_URL: "http://127.0.0.1:4021/",
};

Deno.test("parseConfig() offers no standard method by default (the demo needs no chain)", () => {
  const c = parseConfig({});
  assert.deepEqual(c.payments, { evm: null, stripe: null, settleSweepIntervalMs: 60_000 });
});

Deno.test("parseConfig() offers the evm method only when chain, token, recipient and facilitator are all set", () => {
  const full = parseConfig(evmEnv).payments.evm!;
  assert.equal(full.chainId, 31337);
  assert.equal(full.facilitatorUrl, "http://127.0.0.1:4021");
  assert.equal(full.tokenName, "USD Coin");
  assert.equal(full.tokenVersion, "2");
  assert.equal(full.decimals, 6);
  assert.equal(full.rpcUrl, null);
  for (const missing of Object.keys(evmEnv)) {
    const env: Record<string, string> = { ...evmEnv };
    delete env[missing];
    assert.equal(parseConfig(env).payments.evm, null, `${missing} unset`);
  }
});

Deno.test("parseConfig() refuses a malformed PAY_EVM_TOKEN, naming the variable without echoing it", () => {
  assert.throws(
    () => parseConfig({ ...evmEnv, PAY_EVM_TOKEN: "0xnot-an-address<script>" }),
    (err: Error) =>
      /PAY_EVM_TOKEN must be a 0x-prefixed 20-byte hex address/.test(err.message) &&
      !err.message.includes("<script>"),
  );
  assert.throws(() => parseConfig({ ...evmEnv, PAY_X402_FACILITATOR_URL: "ftp://x" }), /PAY_X402_FACILITATOR_URL/);
});

Deno.test("parseConfig() offers the stripe method when its secret key is set", () => {
  const s = parseConfig({ PAY_STRIPE_SECRET_KEY: "sk_test_x" }).payments.stripe!;
  assert.equal(s.apiUrl, "https://api.stripe.com");
  assert.equal(s.networkId, "internal");
});
