/**
 * The storefront's self-description, generated from the catalog: `GET /services`, `/manifest.json`,
 * `/llms.txt` (reference index) and `/llms-full.txt` (prices, plan ids and payment mechanics).
 */
import { planView } from "./catalog.ts";
import { CARD_MINIMUM_MICROS, formatUsd } from "./money.ts";
import { SANDBOX_TOKENS } from "./processor.ts";
import type { Plan, Seller, Service } from "./types.ts";

/** What the docs are built from. */
export interface CatalogSnapshot {
  seller: Seller;
  services: Service[];
  plans: Plan[];
  /** The seller's storefront base URL (identity's `sellerBaseUrl`): every URL named is on it. */
  storefrontUrl: string;
  networkApiUrl: string;
  /** The processor behind the rails (`sandbox` documents its test tokens). */
  processor: string;
  /** The MCP endpoint (`{base_url}/mcp`) where the same services are tools. */
  mcpUrl?: string;
}

/** How the MCP endpoint is described in the documents. */
const mcpView = (url: string) => ({
  url,
  transport: "streamable-http",
  stateless: true,
  auth: "Authorization: Bearer <agent access token>",
  tools: ["search_articles", "ask", "list_data_models", "list_ai_models"],
  payment: "JSON-RPC error -32042 carries the Payment challenges; answer in params._meta",
});

const serviceView = (s: Service, storefrontUrl: string) => ({
  slug: s.slug,
  name: s.name,
  kind: s.kind,
  modelId: s.modelId,
  endpoint: s.kind === "search"
    ? { method: "POST", url: `${storefrontUrl}/v2/search?data_model_id=${s.modelId}`, body: '{"query": "..."}' }
    : { method: "POST", url: `${storefrontUrl}/aimodel/${s.modelId}`, body: '{"query": "..."}' },
  meters: [
    { meterSlug: "query", priceUsd: formatUsd(s.meters.query), unit: "request" },
    ...(s.meters.full_text !== undefined
      ? [{ meterSlug: "full_text", priceUsd: formatUsd(s.meters.full_text), unit: "article text" }]
      : []),
  ],
});

/** `GET /services`. */
export function servicesDocument(c: CatalogSnapshot): Record<string, unknown> {
  return {
    seller: { id: c.seller.sellerId, name: c.seller.name },
    currency: "usd",
    services: c.services.map((s) => serviceView(s, c.storefrontUrl)),
    plans: c.plans.map((p) => planView(p, c.storefrontUrl)),
    ...(c.mcpUrl ? { mcp: mcpView(c.mcpUrl) } : {}),
  };
}

/** `GET /manifest.json`. */
export function manifestDocument(c: CatalogSnapshot): Record<string, unknown> {
  const u = c.storefrontUrl;
  return {
    schemaVersion: "1.0",
    name: c.seller.name,
    sellerId: c.seller.sellerId,
    description: `Paid article search and real-time answers from ${c.seller.name}, for agents`,
    endpoints: {
      identity: `${u}/agent/identity`,
      token: `${u}/oauth2/token`,
      services: `${u}/services`,
      purchase: `${u}/plans/{planId}/purchase`,
      extend: `${u}/extend`,
      entitlements: `${u}/agent/entitlements`,
      networkEntitlements: `${c.networkApiUrl}/agent/entitlements`,
      paymentStatus: `${u}/payments/{reference}`,
      llms: `${u}/llms.txt`,
      llmsFull: `${u}/llms-full.txt`,
      ...(c.mcpUrl ? { mcp: c.mcpUrl } : {}),
    },
    payment: {
      scheme: "Payment",
      rails: ["card", "wallet"],
      currency: "usd",
      amountFormat: 'string with six decimals, whole cents ("5.000000")',
      cardMinimumUsd: formatUsd(CARD_MINIMUM_MICROS),
      processor: c.processor,
    },
    services: c.services.map((s) => serviceView(s, u)),
    plans: c.plans.map((p) => planView(p, u)),
  };
}

/** `GET /llms.txt`: the short index. */
export function llmsTxt(c: CatalogSnapshot): string {
  const u = c.storefrontUrl;
  const lines = [
    `# ${c.seller.name}`,
    "",
    `> Paid article search and real-time answers for agents. Prices in USD; pay with the HTTP Payment scheme.`,
    "",
    "## Reference",
    `- [Services and prices](${u}/services): JSON list of services, meters and plans`,
    `- [Manifest](${u}/manifest.json): endpoints and payment rails`,
    `- [Full guide](${u}/llms-full.txt): identity, purchase, payment mechanics, errors`,
    ...(c.mcpUrl
      ? [`- [MCP server](${c.mcpUrl}): the same services as MCP tools (Streamable HTTP, bearer agent token)`]
      : []),
    "",
    "## Services",
    ...c.services.map((s) =>
      `- ${s.slug} (${s.kind}): ${formatUsd(s.meters.query)} USD per query${
        s.meters.full_text !== undefined ? `, ${formatUsd(s.meters.full_text)} USD per full text` : ""
      }`
    ),
    "",
    "## Plans",
    ...c.plans.map((p) =>
      p.kind === "credit"
        ? `- ${p.id} "${p.name}": credit from ${formatUsd(p.minimumMicros)} to ${formatUsd(p.maximumMicros)} USD`
        : `- ${p.id} "${p.name}": pay as you go, ${
          formatUsd(p.pricePerRequestMicros)
        } USD per request (not purchasable)`
    ),
    "",
  ];
  return lines.join("\n");
}

/** `GET /llms-full.txt`: everything an agent needs to buy and use a plan. */
export function llmsFullTxt(c: CatalogSnapshot): string {
  const u = c.storefrontUrl;
  const credit = c.plans.find((p) => p.kind === "credit");
  const example = credit?.id ?? "<planId>";
  const sandbox = c.processor === "sandbox"
    ? [
      "## Sandbox test tokens",
      "",
      "This storefront runs the sandbox processor. Tokens and outcomes:",
      `- card \`${SANDBOX_TOKENS.card.success}\`: succeeds`,
      `- card \`${SANDBOX_TOKENS.card.insufficientFunds}\`: settlement_failed, settlementReason insufficient_funds`,
      `- card \`${SANDBOX_TOKENS.card.incomplete}\`: payment_incomplete`,
      `- card \`${SANDBOX_TOKENS.card.unavailable}\`: payment_provider_unavailable (503, retry)`,
      `- wallet \`${SANDBOX_TOKENS.wallet.success}\`, \`${SANDBOX_TOKENS.wallet.insufficientFunds}\`, \`${SANDBOX_TOKENS.wallet.unavailable}\``,
      "",
    ]
    : [];
  return [
    llmsTxt(c),
    "## 1. Identity",
    "",
    `Register once (POST ${u}/agent/identity), exchange the assertion for a short-lived access token`,
    `(POST ${u}/oauth2/token), and send \`Authorization: Bearer <token>\` on purchase, extend and`,
    "entitlements. When `Authorization` carries a `Payment` credential, send the token in",
    "`ZC-Agent-Authorization: Bearer <token>` instead; never comma-combine the two.",
    "",
    "## 2. Buying credit",
    "",
    `POST ${u}/plans/${example}/purchase with {"amountUsd": "5.000000"} and your bearer token.`,
    "amountUsd is a string with six decimals and must be a whole number of cents, between the plan's",
    `purchase.minimumUsd and purchase.maximumUsd; card rails need at least ${formatUsd(CARD_MINIMUM_MICROS)} USD`,
    "(purchase.cardMinimumUsd), wallet rails are exempt. Send an Idempotency-Key header; a repeat with",
    "the same key and body returns the first answer instead of buying twice.",
    "",
    "Without payment the answer is 402 with one `WWW-Authenticate: Payment ...` challenge per rail",
    "(method card or wallet, intent charge) and a JSON body listing the rails and a `card` block with",
    "its statusUrl. The 402 changes nothing. Answer a challenge by repeating the request with",
    "`Authorization: Payment <credential>` (base64url JSON of {challenge, payload: {token}}) and the",
    "agent token in ZC-Agent-Authorization. Success is 200 with a `Payment-Receipt` header.",
    "",
    'Card checkout lane: send {"amountUsd": "...", "checkout": true}. The 402 carries card.checkout.url,',
    "a hosted page where a human pays, and card.statusUrl. Poll statusUrl until `complete` is true, then",
    'repeat the request answering the card challenge with payload {"checkout": true}. Until the human',
    "has paid, the retry answers payment_incomplete.",
    "",
    `POST ${u}/extend with {"amountUsd": "..."} (optionally "planId") tops up a plan you hold, the same way.`,
    "",
    "## 3. Calling services",
    "",
    `Call POST ${u}/v2/search?data_model_id=<dm_...> or POST ${u}/aimodel/<am_...> with your bearer`,
    "token. Each query is charged at the service's price against your plan credit; the upstream status",
    "and body come back unchanged, with a zc-request-id header. A usage report that cannot be billed",
    "is named in zc-usage-error (invalid_usage_header, usage_not_priced) and is not charged; do not retry.",
    "Pay-as-you-go services answer 402 with a `payment` block: pay that call's challenge and retry.",
    "",
    "## 4. Entitlements",
    "",
    `GET ${u}/agent/entitlements lists your live plans here with remaining credit, shared by every`,
    `credential the same human claimed. GET ${c.networkApiUrl}/agent/entitlements lists them at every seller.`,
    "Plans bought by an unclaimed anonymous credential expire with it.",
    "",
    "## 5. Errors (JSON, code in `error`)",
    "",
    "- plan_required 403 (reason not_included_in_plan with meters, or access_not_found; plans[].purchase.url)",
    "- usage_exhausted: credit ran out; extend or purchase again",
    "- settlement_failed (settlementReason): start again from a fresh 402",
    "- payment_consumed / payment_refunded / payment_failed / payment_released: terminal for that reference",
    "- payment_incomplete: poll statusUrl, then retry; payment_unknown: request a fresh 402",
    "- payment_provider_unavailable 503: the only payment error to retry unchanged, with backoff",
    "- payment_request_mismatch / payment_amount_mismatch 409: the payment answers another request",
    "- invalid_request, payg_not_purchasable, amount_required, amount_not_cent_increment,",
    "  amount_below_minimum, amount_above_maximum, amount_below_card_minimum: 400",
    "- plan_not_found 404, seller_not_found 404, signing_secret_required 409, entitlements_not_available 501",
    "",
    ...sandbox,
  ].join("\n");
}
