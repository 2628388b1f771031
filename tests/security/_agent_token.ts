import assert from "node:assert/strict";

/**
 * An access token of a new anonymous agent, the way an agent gets one: `POST /agent/identity`, then
 * the assertion exchanged at `/oauth2/token` (RFC 7523 jwt-bearer).
 */
export async function anonymousAgentToken(
  app: { request(url: string, init: RequestInit): Response | Promise<Response> },
  host: string,
): Promise<string> {
  const identity = await (await app.request(`${host}/agent/identity`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type: "anonymous" }),
  })).json();
  const token = await (await app.request(`${host}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
      assertion: identity.identity.assertion,
    }).toString(),
  })).json();
  assert.ok(typeof token.access_token === "string", "the agent has an access token");
  return token.access_token;
}
