/**
 * `mppx` (the `Payment` scheme's challenges, credentials, receipts and MCP binding), loaded on the
 * first use that needs it: importing it costs about 0.3 s, and most processes and test files that
 * build the app never issue or read a payment.
 */
import { lazily } from "../lazily.ts";

/** The `mppx` module, imported once on the first call. */
export const loadMppx = lazily(() => import("mppx"));

/** The loaded `mppx` module. */
export type Mppx = Awaited<ReturnType<typeof loadMppx>>;
