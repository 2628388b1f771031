import type { ApiKeyRecord } from "../core/auth/mod.ts";
import type { AgentPrincipal, Seller } from "../core/identity/mod.ts";
import type { CheckedHeaders } from "../core/payproxy/mod.ts";
import type { DataModel, Widget } from "../core/store/mod.ts";
import type { RequestScope } from "./request_scope.ts";

/** The authenticated agent on storefront routes (set by routes/storefront/agent_auth.ts). */
export interface AgentContext extends AgentPrincipal {
  /** The seller whose host the request came to. */
  seller: Seller;
}

/**
 * Which error-body shape a route group answers with (the spec fixes one per family). Each sub-app
 * is built for one family (routes/family.ts), so a route's family follows from where it is mounted.
 */
/** `zeroclick` is `payproxy` under Dappier's path names: the same bodies but its own 401 error. */
/** `widget`: the public widget routes, `{message, code}` on every error. */
export type ErrorFamily = "message" | "payproxy" | "zeroclick" | "storefront" | "oauth" | "widget";

/**
 * Hono environment shared by every route module. `c.env` is the request's scope (its id, and who
 * called, for the access log), made by the app's root (routes/middleware/request_envelope.ts).
 */
export type AppEnv = {
  Bindings: RequestScope;
  Variables: {
    /** Set by the API key middleware. */
    apiKey?: ApiKeyRecord;
    tenantId?: string;
    /** The raw request body bytes, set by the body reader (signatures need exact bytes). */
    rawBody?: Uint8Array;
    /** Payproxy: the signature headers as checked before the body was read (routes/payproxy.ts). */
    signatureHeaders?: CheckedHeaders;
    /** Caller identity for logs, e.g. `payproxy:<agent-id>`. */
    caller?: string;
    /** Storefront: the seller resolved from the Host header. */
    seller?: Seller;
    /** Storefront: the agent behind a verified access token. */
    agent?: AgentContext;
    /** Public widget routes: the widget of the path, once its origin check passed. */
    widget?: Widget;
    /** The tenant's data model named by the path or query (routes/middleware/data_model.ts). */
    dataModel?: DataModel;
  };
};

/**
 * Variables a middleware sets before any handler of a sub-app runs, typed as present: a sub-app
 * built with one of these environments runs behind that middleware on every path it serves (its
 * own, or its family's when it is mounted inside one, e.g. the analytics insight routes).
 */
type With<V> = { Bindings: RequestScope; Variables: AppEnv["Variables"] & V };

/** Behind the API key check (routes/middleware/api_key.ts). */
export type TenantEnv = With<{ apiKey: ApiKeyRecord; tenantId: string }>;

/** Behind the API key check and the tenant's data model (routes/middleware/data_model.ts). */
export type DataModelEnv = With<{ apiKey: ApiKeyRecord; tenantId: string; dataModel: DataModel }>;

/** Public widget routes behind the widget gate (routes/widget/api.ts). */
export type WidgetEnv = With<{ widget: Widget }>;
