import { formatUsd } from "./money.ts";
import { loadMppx } from "./mppx.ts";
import type { CommerceService } from "./service.ts";
import { planCovers } from "./catalog.ts";
import type { AuthenticatedAgent, PaygPlan, Seller } from "./types.ts";
import { jsonObjectKeys } from "./json_object_keys.ts";

/** What one paid answer cost and what is left: the `usage` block of REST answers and of MCP `_meta`. */
export interface UsageReceipt {
  cost_usd: string;
  /** Credit left at this seller across the agent's plans (its human's included), after this call. */
  balance_usd: string;
  /** The plan that paid: the credit plan debited, or the pay-as-you-go plan charged; null when nothing was charged. */
  plan_id: string | null;
  request_id: string;
  /** Pay per call: the reference of the payment (`Payment-Receipt`) that paid this call. */
  payment_reference?: string;
}

/** The agent's credit at one seller: `GET /agent/balance` and the MCP `balance` tool. */
export interface Balance {
  seller_id: string;
  balance_usd: string;
  currency: "usd";
  plans: { plan_id: string; plan_name: string | null; remaining_usd: string }[];
}

/**
 * Receipts of paid answers, read back from what the paid proxy recorded (the request's debit, or
 * the payment its `Payment-Receipt` names), so the figures are the ledger's own.
 */
export class UsageReceipts {
  constructor(private readonly commerce: CommerceService) {}

  /** The agent's credit at the seller, per plan and in total. */
  async balance(seller: Seller, agent: AuthenticatedAgent): Promise<Balance> {
    const [entries, plans] = await Promise.all([
      this.commerce.ledger.entries(agent, seller.sellerId),
      this.commerce.sellingPlans(seller),
    ]);
    const names = new Map(plans.map((p) => [p.id, p.name]));
    const total = entries.reduce((sum, e) => sum + e.value.creditMicros, 0);
    return {
      seller_id: seller.sellerId,
      balance_usd: formatUsd(total),
      currency: "usd",
      plans: entries.map((e) => ({
        plan_id: e.value.planId,
        plan_name: names.get(e.value.planId) ?? null,
        remaining_usd: formatUsd(e.value.creditMicros),
      })),
    };
  }

  /** The pay-as-you-go plan that covers the service a `zc-usage` header names, or null. */
  async #paygPlanOf(seller: Seller, usage: string | null): Promise<PaygPlan | null> {
    const slug = usageSlug(usage);
    if (!slug) return null;
    const plans = await this.commerce.sellingPlans(seller);
    return plans.find((p): p is PaygPlan => p.kind === "payg" && planCovers(p, slug)) ?? null;
  }

  /**
   * The receipt of a paid proxy response (its `zc-request-id`, and `Payment-Receipt` when the call
   * was paid per call); null when the response names no request.
   */
  async forResponse(seller: Seller, agent: AuthenticatedAgent, res: Response): Promise<UsageReceipt | null> {
    const requestId = res.headers.get("zc-request-id");
    if (!requestId) return null;
    let costMicros = 0;
    let planId: string | null = null;
    let reference: string | undefined;
    const paid = res.headers.get("payment-receipt");
    if (paid) {
      const { Receipt } = await loadMppx();
      try {
        reference = Receipt.deserialize(paid).reference;
      } catch { /* not ours to read: no payment figures */ }
      const record = reference ? (await this.commerce.payments.get(seller.sellerId, reference)).value : null;
      if (record) {
        costMicros = record.amountMicros;
        planId = typeof record.terms?.planId === "string" ? record.terms.planId : null;
      } else {
        // A method whose receipt names no record of ours: the call was paid at the pay-as-you-go
        // price of the plan covering the service the upstream reported.
        const plan = await this.#paygPlanOf(seller, res.headers.get("zc-usage"));
        if (plan) {
          costMicros = plan.pricePerRequestMicros;
          planId = plan.id;
        }
      }
    } else {
      const debit = await this.commerce.ledger.debit(seller.sellerId, requestId);
      // Only this agent's own debit: a request id is the caller's to choose.
      if (debit && debit.credentialId === agent.credentialId) {
        // A refunded debit (an unbillable answer) charged nothing, to no plan.
        if (debit.state === "billed") {
          costMicros = debit.amountMicros;
          planId = debit.planId;
        }
      }
    }
    const { balance_usd } = await this.balance(seller, agent);
    return {
      cost_usd: formatUsd(costMicros),
      balance_usd,
      plan_id: planId,
      request_id: requestId,
      ...(reference ? { payment_reference: reference } : {}),
    };
  }
}

/** The first service slug of a `zc-usage` header, or null. */
function usageSlug(header: string | null): string | null {
  try {
    const first = JSON.parse(header ?? "")?.[0]?.serviceSlug;
    return typeof first === "string" ? first : null;
  } catch {
    return null;
  }
}

const encoder = new TextEncoder();

/**
 * A JSON object answer with its `usage` block added (never replacing a field of the answer); other
 * answers are returned as they are. The answer is never parsed nor stringified: its member names are
 * read by a scan that yields to other requests ({@link jsonObjectKeys}) and the block is spliced in
 * before its closing brace. 1,000 results with full text are 21 MB, and `JSON.parse` then
 * `JSON.stringify` of them held the event loop for every request of the process.
 */
export async function withUsageBlock(res: Response, usage: UsageReceipt | null): Promise<Response> {
  if (!usage || !res.ok || !/^application\/json\b/i.test(res.headers.get("content-type") ?? "")) return res;
  const bytes = new Uint8Array(await res.arrayBuffer());
  const object = await jsonObjectKeys(bytes);
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  const init = { status: res.status, statusText: res.statusText, headers };
  if (object === null || object.keys.includes("usage")) return new Response(bytes, init);
  const { keys, close } = object;
  const member = encoder.encode(`${keys.length ? "," : ""}"usage":${JSON.stringify(usage)}}`);
  // One buffer, not a Blob: Deno.serve writes bytes at once where it streams a Blob's.
  const out = new Uint8Array(bytes.length + member.length - 1);
  out.set(bytes.subarray(0, close));
  out.set(member, close);
  out.set(bytes.subarray(close + 1), close + member.length);
  return new Response(out, init);
}
