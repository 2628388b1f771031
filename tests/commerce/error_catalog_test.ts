/**
 * The commerce and payproxy rooms declare each error once, in their catalogs, and raise them by
 * name; the catalog entries keep the wire codes, statuses and notes the storefront and payproxy
 * bodies had.
 */
import assert from "node:assert/strict";
import { commerceErrors } from "../../core/commerce/errors.ts";
import { payproxyErrors } from "../../core/payproxy/errors.ts";
import { renderError } from "../../routes/errors.ts";
import { httpStatus } from "../../routes/error_status.ts";

const ROOT = new URL("../../", import.meta.url);
const RAISING = [
  "core/commerce",
  "core/payproxy",
  "routes/payproxy.ts",
  "routes/storefront/purchase.ts",
  "routes/storefront/checkout.ts",
  "routes/storefront/allowance.ts",
];

async function sources(path: string): Promise<[string, string][]> {
  const url = new URL(path, ROOT);
  if (path.endsWith(".ts")) return [[path, await Deno.readTextFile(url)]];
  const out: [string, string][] = [];
  for await (const e of Deno.readDir(url)) {
    if (e.isFile && e.name.endsWith(".ts")) out.push(...await sources(`${path}/${e.name}`));
  }
  return out;
}

Deno.test('commerce and payproxy build no error inline: no new AppError(status, "code", ...) outside the catalogs', async () => {
  const inline = /new AppError\(\s*\d{3}\s*,\s*"/;
  const offenders: string[] = [];
  for (const path of RAISING) {
    for (const [file, text] of await sources(path)) if (inline.test(text)) offenders.push(file);
  }
  assert.deepEqual(offenders, []);
  // `payment_unknown` was built nine times; now only its declarations name it.
  for (const path of RAISING) {
    for (const [file, text] of await sources(path)) {
      if (file.endsWith("/errors.ts")) continue;
      assert.doesNotMatch(text, /AppError\([^)]*"payment_unknown"/, file);
    }
  }
});

Deno.test("catalog errors render the storefront bodies they always had", () => {
  const body = (e: ReturnType<typeof commerceErrors.payment_unknown>) => {
    const r = renderError("storefront", e);
    return { status: r.status, body: JSON.parse(r.body!) };
  };
  assert.deepEqual(body(commerceErrors.payment_unknown({ detail: "request a fresh 402" })), {
    status: 404,
    body: { error: "payment_unknown", detail: "request a fresh 402" },
  });
  assert.deepEqual(body(commerceErrors.challenge_expired()), {
    status: 404,
    body: { error: "payment_unknown", detail: "request a fresh 402 challenge" },
  });
  assert.deepEqual(body(commerceErrors.settlement_failed({ extra: { settlementReason: "insufficient_funds" } })), {
    status: 402,
    body: {
      error: "settlement_failed",
      detail: "retry from the start for a fresh challenge",
      settlementReason: "insufficient_funds",
    },
  });
  assert.deepEqual(body(commerceErrors.amount_below_minimum({ minimumUsd: "1.000000" })), {
    status: 400,
    body: { error: "amount_below_minimum", detail: "amountUsd must be at least 1.000000" },
  });
  assert.deepEqual(body(commerceErrors.plan_required({ extra: { plans: [] } })), {
    status: 403,
    body: { error: "plan_required", reason: "access_not_found", plans: [] },
  });
  assert.deepEqual(body(commerceErrors.request_id_reused()), {
    status: 409,
    body: { error: "invalid_request", detail: "send a fresh zc-request-id for each call" },
  });
  assert.equal(httpStatus(commerceErrors.payment_provider_unavailable()), 503);
  assert.equal(httpStatus(commerceErrors.entitlements_not_available()), 501);
  assert.equal(httpStatus(commerceErrors.upstream_unavailable()), 502);
});

Deno.test("payproxy catalog errors render the payproxy family's fixed bodies", () => {
  const render = (e: ReturnType<typeof payproxyErrors.empty_query>) => renderError("payproxy", e);
  assert.deepEqual(render(payproxyErrors.missing_data_model_id()), {
    status: 400,
    body: "Missing required query parameter: data_model_id",
    contentType: "text/plain; charset=UTF-8",
  });
  assert.equal(render(payproxyErrors.invalid_payproxy_signature()).body, '{"error":"invalid_payproxy_signature"}');
  assert.equal(
    render(payproxyErrors.payment_required({ extra: { serviceSlug: "s", usage: [] } })).body,
    '{"error":"payment_required","serviceSlug":"s","usage":[]}',
  );
  assert.equal(
    render(payproxyErrors.query_too_long({ limit: 10 })).body,
    '{"message":"query is too long: the limit is 10 characters","code":"query_too_long"}',
  );
  assert.equal(
    render(payproxyErrors.invalid_field({ issue: "x: bad" })).body,
    '{"message":"x: bad","code":"invalid_request"}',
  );
  assert.deepEqual(render(payproxyErrors.model_not_found()), { status: 404, body: null });
});
