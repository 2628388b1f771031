/**
 * The links room's errors, declared once: a stable code, a public message and a kind. A token
 * that does not verify is never echoed, nor is why it failed (malformed, tampered, unknown key).
 */
import { declareErrors } from "../errors.ts";

export const linkErrors = declareErrors({
  /** A tracking-link token that is unknown, malformed or tampered with. */
  link_not_found: { kind: "not_found", code: "not_found", message: "Link not found" },
});
