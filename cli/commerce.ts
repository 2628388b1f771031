/** Admin commands of the commerce room (merged into cli/commands.ts). */
import { type AdminCommand, AdminUsageError as UsageError } from "./command.ts";
import { FULL_TEXT_METER, parseAmountUsd } from "../core/commerce/mod.ts";

const need = (v: Record<string, unknown>, name: string): string => {
  const x = v[name];
  if (typeof x !== "string" || x === "") throw new UsageError(`--${name} is required`);
  return x;
};
const usd = (v: Record<string, unknown>, name: string): number => {
  try {
    return parseAmountUsd(need(v, name));
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`--${name} must be a whole-cent USD amount such as 5.00`);
  }
};
const list = (x: unknown): string[] =>
  (Array.isArray(x) ? x : typeof x === "string" ? [x] : []).flatMap((s) => String(s).split(",")).map((s) => s.trim())
    .filter(Boolean);

async function requireSeller(deps: Parameters<AdminCommand["run"]>[0], sellerId: string) {
  if (!(await deps.commerce.catalog.getSeller(sellerId))) throw new UsageError(`seller not found: ${sellerId}`);
}

export const commerceAdminCommands: Record<string, AdminCommand> = {
  "plan create": {
    usage:
      "plan create --seller <id> --name <name> (--credit --min <usd> --max <usd> [--meters query,full_text] | --payg --price <usd>) [--services <slug,...>]",
    options: {
      seller: { type: "string" },
      name: { type: "string" },
      credit: { type: "boolean" },
      payg: { type: "boolean" },
      min: { type: "string" },
      max: { type: "string" },
      price: { type: "string" },
      services: { type: "string", multiple: true },
      meters: { type: "string", multiple: true },
    },
    async run(deps, v) {
      const sellerId = need(v, "seller");
      await requireSeller(deps, sellerId);
      const services = list(v.services);
      const meters = list(v.meters);
      if (meters.some((m) => m !== "query" && m !== FULL_TEXT_METER)) {
        throw new UsageError("--meters takes query and full_text");
      }
      const base = { name: need(v, "name"), services: services.length ? services : undefined };
      if (v.payg === true && v.credit !== true) {
        return await deps.commerce.catalog.addPaygPlan(sellerId, { ...base, pricePerRequestMicros: usd(v, "price") });
      }
      if (v.credit !== true) throw new UsageError("choose --credit or --payg");
      const min = usd(v, "min");
      const max = usd(v, "max");
      if (!(min > 0 && max >= min)) throw new UsageError("--min must be above 0 and at most --max");
      return await deps.commerce.catalog.addCreditPlan(sellerId, {
        ...base,
        ...(meters.length ? { meters } : {}),
        minimumMicros: min,
        maximumMicros: max,
      });
    },
  },
  "plan list": {
    usage: "plan list --seller <id>",
    options: { seller: { type: "string" } },
    run: (deps, v) => deps.commerce.catalog.listPlans(need(v, "seller")),
  },
  "pricing set": {
    usage: "pricing set --seller <id> --default <usd per query> [--service <slug>=<usd> ...] [--full-text <usd>]",
    options: {
      seller: { type: "string" },
      default: { type: "string" },
      service: { type: "string", multiple: true },
      "full-text": { type: "string" },
    },
    async run(deps, v) {
      const sellerId = need(v, "seller");
      await requireSeller(deps, sellerId);
      const servicePrices: Record<string, number> = {};
      for (const pair of list(v.service)) {
        const [slug, price] = pair.split("=");
        if (!slug || !price) throw new UsageError("--service takes <slug>=<usd>");
        servicePrices[slug] = usd({ price }, "price");
      }
      const pricing = {
        defaultQueryPriceMicros: usd(v, "default"),
        servicePrices,
        ...(typeof v["full-text"] === "string" ? { fullTextPriceMicros: usd(v, "full-text") } : {}),
      };
      await deps.commerce.catalog.setPricing(sellerId, pricing);
      return pricing;
    },
  },
  "payment refund": {
    usage: "payment refund --seller <id> --reference <reference>",
    options: { seller: { type: "string" }, reference: { type: "string" } },
    async run(deps, v) {
      try {
        return await deps.commerce.service.payments.refund(need(v, "seller"), need(v, "reference"));
      } catch (err) {
        if (err instanceof UsageError) throw err;
        throw new UsageError((err as Error).message);
      }
    },
  },
};
