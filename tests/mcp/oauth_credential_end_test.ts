/**
 * An anonymous credential ends at an instant inside a second, and tokens end on whole seconds (JWT
 * `exp`), never after their credential. A refresh_token grant in the credential's last partial
 * second found the credential live (it compared milliseconds) and minted an access token that was
 * already expired (`expires_in: 0`): the MCP host stored it, met a 401, refreshed again. The
 * credential now counts as ended from the last whole second its tokens could reach: the grant is
 * refused as for an ended credential, and the host asks its human again.
 */
import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import { HostProvider, refreshGrant, signInAnonymously } from "./_host_provider.ts";
import { mcpWorld } from "./_world.ts";

Deno.test("POST /oauth2/token (refresh_token): a credential with under a second left gets invalid_grant, never a token of 0 s", async () => {
  await using w = await mcpWorld({ realBase: true });
  // A real clock is inside a second: so is the end of the credential made now.
  w.clock.advance(250);
  const provider = new HostProvider("http://127.0.0.1:53682/callback");
  await signInAnonymously(w, provider);
  const cred = await w.deps.storefront.accounts.credential(decodeJwt(provider.saved!.access_token).sub!);
  const endMs = Date.parse(cred!.expiresAt!);
  assert.notEqual(endMs % 1000, 0);
  const refresh = (token: string) => refreshGrant(w, provider, token);

  // A second and a bit left: a token of 1 s.
  w.clock.set(endMs - 1_200);
  const last = await refresh(provider.saved!.refresh_token!);
  assert.equal(last.status, 200, JSON.stringify(last));
  assert.equal(last.expires_in, 1);
  // Under a second left: no token could outlive the credential and be valid now.
  w.clock.set(endMs - 200);
  const refused = await refresh(last.refresh_token);
  assert.deepEqual(refused, {
    status: 400,
    error: "invalid_grant",
    error_description: "The agent identity of this grant is gone",
  });
});
