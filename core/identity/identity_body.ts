import type { Account, Credential } from "./types.ts";

/** A credential with its assertion (and, when claimed, a refresh token), ready to send. */
export interface IssuedIdentity {
  credential: Credential;
  account: Account | null;
  assertion: string;
  assertionExpiresIn: number;
  refresh: { token: string; expiresIn: number } | null;
}

/** A claim token handed to the agent. */
export interface IssuedClaim {
  token: string;
  expiresIn: number;
  loginHint?: string;
}

/** The `claim` block of a response (spec 2.9: `claim.token`). */
export function claimBlock(c: IssuedClaim): Record<string, unknown> {
  return { token: c.token, expires_in: c.expiresIn, ...(c.loginHint ? { login_hint: c.loginHint } : {}) };
}

/**
 * The registration / verified identity body (spec 2.9): `identity.assertion`, and
 * `identity.refresh_token.value` on claimed credentials only.
 */
export function identityBody(i: IssuedIdentity, claim?: IssuedClaim): Record<string, unknown> {
  const c = i.credential;
  return {
    identity: {
      credential_id: c.credentialId,
      type: c.type,
      state: c.state,
      claimed: c.state === "claimed",
      assertion: i.assertion,
      assertion_expires_in: i.assertionExpiresIn,
      ...(c.expiresAt ? { expires_at: c.expiresAt } : {}),
      ...(i.account ? { account: { account_id: i.account.accountId, email: i.account.email } } : {}),
      ...(i.refresh ? { refresh_token: { value: i.refresh.token, expires_in: i.refresh.expiresIn } } : {}),
    },
    ...(claim ? { claim: claimBlock(claim) } : {}),
  };
}
