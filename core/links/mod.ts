/** The links room's face: what other rooms and the routes may use. */

export { ClickGate } from "./click_gate.ts";
export { clickEvent } from "./clicks.ts";
export { linkErrors } from "./errors.ts";
export type { LinkArticle, LinkBuilder, LinkContext, LinkPlacement } from "./links.ts";
export { SignedLinks } from "./tracking.ts";
