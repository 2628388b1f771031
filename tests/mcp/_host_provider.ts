/** An MCP host's OAuth side for the MCP SDK client, held in memory. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import type { TestWorld } from "../_helpers.ts";
import { consent } from "./_consent.ts";

/** An MCP host's token store; counts the times it had to send the human to the consent page. */
export class HostProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;
  consentsAsked = 0;
  constructor(readonly redirectUrl: string, readonly clientName = "Parallel host") {}
  get clientMetadata(): OAuthClientMetadata {
    return { redirect_uris: [this.redirectUrl], client_name: this.clientName, token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
    this.consentsAsked++;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery") {
    if (scope === "all" || scope === "tokens") this.saved = undefined;
    if (scope === "all" || scope === "client") this.info = undefined;
  }
}

/** Signs the host in through the MCP SDK's code grant, its human choosing the anonymous identity. */
export async function signInAnonymously(w: TestWorld & { base: string }, provider: HostProvider): Promise<void> {
  const first = new StreamableHTTPClientTransport(new URL(`${w.base}/mcp`), { authProvider: provider });
  await new Client({ name: "host", version: "1" }).connect(first).catch(() => {});
  const back = await consent(w, provider.authorizationUrl!.href, "anonymous");
  await first.finishAuth(back.searchParams.get("code")!);
}

/** A refresh_token grant for the host's client: the answer's status and its JSON body. */
export const refreshGrant = (w: { base: string }, provider: HostProvider, token: string) =>
  fetch(`${w.base}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "refresh_token",
      refresh_token: token,
      client_id: provider.info!.client_id,
    }).toString(),
  }).then(async (res) => ({ status: res.status, ...(await res.json()) }));
