/** The auth room's error catalog: the refusals of bearer API keys, declared once. */
import { declareErrors } from "../errors.ts";

export const authErrors = declareErrors({
  missing_api_key: {
    kind: "unauthenticated",
    message: "Missing API key: send Authorization: Bearer <API_KEY>",
  },
  malformed_api_key: {
    kind: "unauthenticated",
    message: "Malformed API key: expected Authorization: Bearer ak_...",
  },
  /** Unknown, or not a key at all: the two are not told apart. */
  invalid_api_key: { kind: "forbidden", message: "Invalid API key" },
  revoked_api_key: { kind: "forbidden", message: "API key revoked" },
});
