/**
 * The `mppx validate` CLI's configuration in the stock-client tests (MPPX_CONFIG points here): its own
 * `evm` method paying from the buyer key the test passes in MPPX_TEST_BUYER_KEY, for the local
 * chain's TestUsd domain. Configuration only: the CLI does the rest. (The shape `defineConfig()` from
 * "mppx/cli" returns, written out: that entry point needs the CLI's bundled dependencies.)
 */
import { evm } from "mppx/evm/client";
import { privateKeyToAccount } from "viem/accounts";

const key = Deno.env.get("MPPX_TEST_BUYER_KEY") as `0x${string}`;
export default {
  methods: [evm({ account: privateKeyToAccount(key), authorization: { name: "Test USD", version: "1" } })],
};
