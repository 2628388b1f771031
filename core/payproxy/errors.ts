/**
 * The payproxy room's errors, each declared once. The payproxy family renders them by status
 * (routes/errors.ts): 400 as text/plain, 401 `{error: "invalid_payproxy_signature"}` (or
 * zeroclick's), 402 `{error: "payment_required", ...extra}`, 422 `{message, code}`, other statuses
 * with no body. Why a signature or model was refused rides in the private cause (logged only).
 */
import { declareErrors } from "../errors.ts";

export const payproxyErrors = declareErrors({
  // Step 1 (search): the query string, before any secret is looked at.
  missing_data_model_id: {
    kind: "bad_request",
    code: "missing_query_parameter",
    message: "Missing required query parameter: data_model_id",
    plain: true,
  },
  data_model_id_malformed: {
    kind: "bad_request",
    code: "invalid_query_parameter",
    message: "data_model_id must start with dm_",
    plain: true,
  },
  search_version_unknown: {
    kind: "bad_request",
    code: "invalid_query_parameter",
    message: (p: { versions: string[] }) => `search_version must be one of ${p.versions.join(", ")}`,
    plain: true,
  },
  // Step 3: the signature (whatever the reason: the reason is the cause).
  invalid_payproxy_signature: { kind: "unauthenticated", message: "Invalid payproxy signature" },
  // Step 4: the body.
  invalid_body: {
    kind: "unprocessable",
    message: (p: { why: string | null }) =>
      p.why === null ? "Request body must be a JSON object" : `Request body could not be decoded: ${p.why}`,
  },
  empty_query: { kind: "unprocessable", message: "query cannot be empty" },
  invalid_field: { kind: "unprocessable", code: "invalid_request", message: (p: { issue: string }) => p.issue },
  invalid_model_id: { kind: "unprocessable", message: "aimodelExternalId is not in the correct format" },
  query_too_long: {
    kind: "unprocessable",
    message: (p: { limit: number }) => `query is too long: the limit is ${p.limit} characters`,
  },
  // Step 5: the model gate (no body).
  model_not_found: { kind: "not_found", code: "not_found", message: "Not found" },
  // Step 6: the allowance.
  payment_required: { kind: "payment_required", message: "Payment required" },
});
