/**
 * Mounted at `/zeroclick`: Dappier's payment-proxy paths, `POST /v2/search` and
 * `POST /aimodel/{aimodel_external_id}`. They run exactly the payproxy orchestration (routes/payproxy.ts:
 * the signature over the `/zeroclick/...` path and query, the single-use mark, the marketplace gate,
 * the allowance check, `zc-usage`); only the 401 body (`{"error":"invalid_zeroclick_signature"}`) and
 * the caller identity (`zeroclick:<agent-id>`) differ.
 */
import type { Deps } from "../composition.ts";
import { createPayproxyRoutes, ZEROCLICK } from "./payproxy.ts";

export function createZeroclickRoutes(deps: Parameters<typeof createPayproxyRoutes>[0] & Pick<Deps, "log">) {
  return createPayproxyRoutes(deps, ZEROCLICK);
}
