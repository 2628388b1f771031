/** The auth room's face: what other rooms and the routes may use. */

export { ApiKeyService } from "./api_keys.ts";
export type { ApiKeyRecord } from "./api_keys.ts";
export { OperatorKeys } from "./operator_keys.ts";
