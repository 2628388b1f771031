import type { Context } from "hono";
import type { AuthenticatedAgent, Seller } from "../../core/commerce/mod.ts";
import type { Deps } from "../../composition.ts";
import {
  challengeView,
  type PaymentUrls,
  type PurchaseOutcome,
  standardOfferHeaders,
} from "../../core/commerce/mod.ts";
import type { AppEnv } from "../env.ts";
import { agentVerifier } from "./agent_auth.ts";
import { sellerOf } from "./seller.ts";

/** Payment and checkout references: opaque, URL-safe. */
export const REFERENCE_RE = /^[A-Za-z0-9_-]{16,128}$/;

/**
 * Writes a purchase's outcome: 200 with its receipt headers (and `idempotent-replayed` for a
 * replay), or the challenge as a 402 with one `WWW-Authenticate` per rail of ours, then mppx's.
 */
export function sendPurchase(r: PurchaseOutcome, urls: PaymentUrls): Response {
  const headers = new Headers({ "content-type": "application/json; charset=UTF-8", "cache-control": "no-store" });
  if (r.kind === "paid") {
    for (const [k, v] of r.receipts) headers.append(k, v);
    if (r.replayed) headers.append("idempotent-replayed", "true");
    return new Response(JSON.stringify(r.body), { status: 200, headers });
  }
  for (const { header } of r.rails) headers.append("www-authenticate", header);
  if (r.standard) { for (const [k, v] of standardOfferHeaders(r.standard)) headers.append(k, v); }
  return new Response(JSON.stringify(challengeView(r, urls)), { status: 402, headers });
}

/** Who a commerce request is for: the seller of its Host, and the agent behind its access token. */
export interface CommerceParties {
  seller(c: Context<AppEnv>): Promise<Seller>;
  /** Runs the identity room's agent middleware; 401 (storefront body) without a valid token. */
  agent(c: Context<AppEnv>): Promise<AuthenticatedAgent>;
}

/** The seller and agent lookups every commerce route starts with. */
export function commerceParties(deps: Pick<Deps, "config" | "storefront" | "commerce">): CommerceParties {
  // The identity room's agent middleware (bearer or ZC-Agent-Authorization rules, 401 reasons),
  // run inline so each handler reads the agent where it needs it.
  const authenticate = agentVerifier(deps);
  return {
    seller: (c) => sellerOf(c, deps),
    agent: async (c) => {
      const principal = await authenticate(c);
      // Plans of an unclaimed credential die with it: its expiry comes from the credential record.
      const record = principal.claimed ? null : await deps.storefront.accounts.credential(principal.credentialId);
      const a: AuthenticatedAgent = {
        credentialId: principal.credentialId,
        claimed: principal.claimed,
        ...(principal.accountId ? { humanId: principal.accountId } : {}),
        ...(record?.expiresAt ? { expiresAt: record.expiresAt } : {}),
      };
      await deps.commerce.service.agents.note(a);
      return a;
    },
  };
}
