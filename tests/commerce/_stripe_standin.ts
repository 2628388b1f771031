/**
 * A LOCAL STAND-IN for the few Stripe API endpoints the card lane touches. It is not Stripe: Stripe's
 * API cannot run here, so this HTTP server on 127.0.0.1 plays it closely enough for mppx's `stripe`
 * method (shared payment tokens) and the mppx client's `createToken`:
 * - `POST /v1/test_helpers/shared_payment/granted_tokens` issues a granted SPT for a payment method,
 *   limited to a currency, a maximum amount and an expiry (Stripe's test helper of that name);
 * - `POST /v1/payment_intents` with `confirm=true` and `shared_payment_granted_token` charges it:
 *   secret key checked, each SPT usable once, limits enforced, `Idempotency-Key` replays the same
 *   PaymentIntent with `Idempotent-Replayed: true`; `pm_card_chargeDeclined` is declined.
 * `captured` is what moved, the stand-in's books the storefront ledger is checked against.
 */
import { Mppx } from "mppx/client";
import { stripe } from "mppx/stripe/client";
import { FixedClock } from "../../core/clock.ts";
import { type CommerceWorld, createCommerceWorld } from "./_helpers.ts";
/** The mppx client for one agent (its token, or the current one), paying with a card through SPTs the stand-in grants. */
export function cardClient(
  w: CommerceWorld,
  standIn: StripeStandIn,
  token: string | (() => string),
  paymentMethod: string,
) {
  const bearer = typeof token === "string" ? () => token : token;
  const sent: string[] = [];
  const transport: typeof fetch = (input, init) => {
    const req = new Request(input, init);
    req.headers.set("host", "store.test");
    req.headers.set("zc-agent-authorization", `Bearer ${bearer()}`);
    const auth = req.headers.get("authorization");
    if (auth) sent.push(auth);
    return Promise.resolve(w.app.fetch(req));
  };
  const client = Mppx.create({
    methods: [stripe({
      paymentMethod,
      // The agent's wallet backend asks Stripe (here: the stand-in) for a granted token.
      createToken: async ({ amount, currency, expiresAt, paymentMethod }) => {
        const res = await fetch(`${standIn.url}/v1/test_helpers/shared_payment/granted_tokens`, {
          method: "POST",
          body: new URLSearchParams({
            payment_method: paymentMethod!,
            "usage_limits[currency]": currency,
            "usage_limits[max_amount]": amount,
            "usage_limits[expires_at]": String(expiresAt),
          }),
        });
        return (await res.json()).id;
      },
    })],
    fetch: transport,
    polyfill: false,
  });
  return { client, sent, transport };
}

/**
 * A commerce world whose card rail is the stand-in (or what stands at `apiUrl` in front of it), on a
 * clock anchored at the process's: mppx reads the process clock for challenge expiry.
 */
export function stripeWorld(
  standIn: StripeStandIn,
  { apiUrl = standIn.url, wrapKv }: { apiUrl?: string; wrapKv?: (kv: Deno.Kv) => Deno.Kv } = {},
): ReturnType<typeof createCommerceWorld> {
  return createCommerceWorld({
    clock: new FixedClock(new Date().toISOString()),
    env: { PAY_STRIPE_SECRET_KEY: standIn.secretKey, PAY_STRIPE_API_URL: apiUrl },
    wrapKv,
  });
}

export interface StripeStandIn {
  url: string;
  secretKey: string;
  /** Succeeded PaymentIntents: id, amount (cents), SPT. */
  captured: { id: string; amount: number; spt: string }[];
  close(): Promise<void>;
}

interface Spt {
  id: string;
  paymentMethod: string;
  currency: string;
  maxAmount: number;
  expiresAt: number;
  used: boolean;
}

export function startStripeStandIn(secretKey = "sk_test_standin"): StripeStandIn {
  const spts = new Map<string, Spt>();
  const byIdempotencyKey = new Map<string, Record<string, unknown>>();
  const captured: StripeStandIn["captured"] = [];
  let seq = 0;
  const error = (status: number, code: string, message: string) =>
    Response.json({ error: { type: "card_error", code, message } }, { status });

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const form = new URLSearchParams(await req.text());
    if (path === "/v1/test_helpers/shared_payment/granted_tokens" && req.method === "POST") {
      const spt: Spt = {
        id: `spt_standin_${++seq}`,
        paymentMethod: form.get("payment_method") ?? "",
        currency: form.get("usage_limits[currency]") ?? "",
        maxAmount: Number(form.get("usage_limits[max_amount]")),
        expiresAt: Number(form.get("usage_limits[expires_at]")),
        used: false,
      };
      spts.set(spt.id, spt);
      return Response.json({ id: spt.id, object: "shared_payment.granted_token" });
    }
    if (path === "/v1/payment_intents" && req.method === "POST") {
      if (req.headers.get("authorization") !== `Basic ${btoa(`${secretKey}:`)}`) {
        return error(401, "invalid_api_key", "Invalid API key provided");
      }
      const key = req.headers.get("idempotency-key");
      const replay = key ? byIdempotencyKey.get(key) : undefined;
      if (replay) return Response.json(replay, { headers: { "idempotent-replayed": "true" } });
      const spt = spts.get(form.get("shared_payment_granted_token") ?? "");
      const amount = Number(form.get("amount"));
      if (!spt) return error(400, "resource_missing", "No such shared payment token");
      if (spt.used) return error(400, "shared_payment_token_used", "This shared payment token was already used");
      if (spt.expiresAt * 1000 < Date.now()) return error(400, "shared_payment_token_expired", "Token expired");
      if (form.get("currency") !== spt.currency || !(amount <= spt.maxAmount)) {
        return error(400, "amount_too_large", "The amount exceeds the token's usage limits");
      }
      spt.used = true;
      if (spt.paymentMethod === "pm_card_chargeDeclined") return error(402, "card_declined", "Your card was declined.");
      const pi = {
        id: `pi_standin_${++seq}`,
        object: "payment_intent",
        amount,
        currency: spt.currency,
        status: "succeeded",
      };
      captured.push({ id: pi.id, amount, spt: spt.id });
      if (key) byIdempotencyKey.set(key, pi);
      return Response.json(pi);
    }
    return error(404, "resource_missing", "Unrecognized request URL");
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    secretKey,
    captured,
    close: () => server.shutdown(),
  };
}
