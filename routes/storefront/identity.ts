import { createRoute, z } from "@hono/zod-openapi";
import { storefrontAddressLimit } from "./address_limit.ts";
import type { Deps } from "../../composition.ts";
import { claimBlock, ID_JAG_TOKEN_TYPE, identityBody, sfError } from "../../core/identity/mod.ts";
import { familyApp } from "../family.ts";
import { bodyReader, type BodyRejection } from "../middleware/body.ts";
import { limitAddress } from "../middleware/public_limits.ts";
import { noStore } from "../middleware/no_store.ts";
import { requireSeller, sellerOf } from "./seller.ts";

const storefrontError = z.object({
  error: z.string(),
  reason: z.string().optional(),
  detail: z.string().optional(),
}).openapi("StorefrontError");
const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: storefrontError } },
});
const identitySchema = z.object({
  identity: z.object({
    credential_id: z.string(),
    type: z.enum(["anonymous", "service_auth", "identity_assertion"]),
    state: z.enum(["unclaimed", "claimed"]),
    claimed: z.boolean(),
    assertion: z.string(),
    assertion_expires_in: z.number().int(),
    expires_at: z.string().optional(),
    account: z.object({ account_id: z.string(), email: z.string() }).optional(),
    refresh_token: z.object({ value: z.string(), expires_in: z.number().int() }).optional(),
  }).optional(),
  claim: z.object({ token: z.string(), expires_in: z.number().int(), login_hint: z.string().optional() }).optional(),
}).openapi("AgentIdentity");

const registerRoute = createRoute({
  method: "post",
  path: "/",
  tags: ["storefront"],
  summary: "Register an agent identity (anonymous, service_auth, identity_assertion) or refresh one",
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({
            type: z.enum(["anonymous", "service_auth", "identity_assertion", "refresh"]),
            login_hint: z.unknown().optional().openapi({
              type: "string",
              description: "service_auth: the user's e-mail",
            }),
            assertion_type: z.string().optional().openapi({ example: ID_JAG_TOKEN_TYPE }),
            assertion: z.string().optional().openapi({ description: "identity_assertion: the ID-JAG" }),
            refresh_token: z.string().optional(),
          }),
        },
      },
    },
  },
  responses: {
    200: {
      description: "service_auth: a claim token; refresh: a new assertion and refresh token",
      content: { "application/json": { schema: identitySchema } },
    },
    201: { description: "A new credential", content: { "application/json": { schema: identitySchema } } },
    400: errorResponse("invalid_request, invalid_login_hint"),
    401: errorResponse(
      "invalid_signature, expired, invalid_audience, replay_detected, login_required, interaction_required (with a claim block), invalid_refresh_token",
    ),
    403: errorResponse(
      "anonymous_registration_disabled, service_auth_registration_disabled, issuer_not_enabled, missing_verified_email",
    ),
    404: errorResponse("seller_not_found"),
    429: errorResponse("rate_limit_exceeded"),
  },
});

const claimRoute = createRoute({
  method: "post",
  path: "/claim",
  tags: ["storefront"],
  summary: "E-mail the human a verification link for a claim",
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({
            type: z.literal("service_auth"),
            claim_token: z.string(),
            login_hint: z.unknown().openapi({ type: "string", description: "The human's e-mail (no +aliases)" }),
          }),
        },
      },
    },
  },
  responses: {
    200: {
      description: "The e-mail is on its way",
      content: {
        "application/json": {
          schema: z.object({
            claim: z.object({ attempt: z.object({ verification_uri: z.string(), expires_in: z.number().int() }) }),
          }),
        },
      },
    },
    400: errorResponse("invalid_request, invalid_login_hint"),
    401: errorResponse("invalid_claim_token"),
    409: errorResponse("already_claimed"),
    410: errorResponse("claim_expired"),
    429: errorResponse("rate_limit_exceeded"),
    503: errorResponse("mail_unavailable"),
  },
});

const completeRoute = createRoute({
  method: "post",
  path: "/claim/complete",
  tags: ["storefront"],
  summary: "Trade the claim token and the user code for the verified identity (once)",
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({ claim_token: z.string(), user_code: z.string().max(64) }),
        },
      },
    },
  },
  responses: {
    200: {
      description: "The verified identity, with a refresh token",
      content: { "application/json": { schema: identitySchema } },
    },
    400: errorResponse("invalid_request, invalid_user_code"),
    401: errorResponse("invalid_claim_token"),
    403: errorResponse("claim_denied, too_many_attempts"),
    409: errorResponse("claim_not_confirmed, already_claimed"),
    410: errorResponse("claim_expired, user_code_expired"),
    429: errorResponse("rate_limit_exceeded"),
  },
});

type IdentityJson = z.infer<typeof identitySchema>;
// The bodies are built by core/identity/identity_body.ts; the schema above documents them.
const asIdentity = (v: Record<string, unknown>) => v as IdentityJson;

const need = (v: unknown, name: string): string => {
  if (typeof v !== "string" || v.length === 0) throw sfError("bad_request", "invalid_request", `${name} is required`);
  return v;
};

/** Storefront bodies that are unreadable, not JSON, or not an object are all 400 `invalid_request` (spec 7.3). */
export const storefrontRejection: BodyRejection = (p) =>
  sfError(
    "bad_request",
    "invalid_request",
    p.kind === "media_type"
      ? "Content-Type must be application/json"
      : p.kind === "syntax"
      ? "The body is not valid JSON"
      : "The body must be a JSON object",
  );

/**
 * Mounted at `/agent/identity`: `POST /`, `/claim` and `/claim/complete`. Every path here needs a
 * seller for the Host header and is rate-limited per client address; bodies are JSON objects.
 */
export function createIdentityRoutes(deps: Pick<Deps, "storefront" | "config" | "log">) {
  const app = familyApp("storefront", deps.log);
  const { identity, claims } = deps.storefront;
  const limit = storefrontAddressLimit(deps);
  // Assertions, refresh tokens, claim tokens and links (in errors too: interaction_required): no cache keeps them.
  app.use("*", noStore, requireSeller(deps), limit);
  app.post(
    "*",
    // No credential yet: a large body's share of the budget counts against its sender's address.
    bodyReader({
      limit: deps.config.maxBodyBytes,
      object: true,
      reject: storefrontRejection,
      holder: (c) => limitAddress(c, deps.config.trustProxy),
    }),
  );

  app.openapi(registerRoute, async (c) => {
    const body = c.req.valid("json");
    const seller = await sellerOf(c, deps);
    switch (body.type) {
      case "anonymous": {
        const r = await identity.anonymous(seller);
        return c.json(asIdentity(identityBody(r.identity, r.claim)), 201);
      }
      case "service_auth": {
        const claim = await identity.serviceAuth(seller, body.login_hint);
        return c.json(asIdentity({ claim: claimBlock(claim) }), 200);
      }
      case "identity_assertion": {
        if (body.assertion_type !== ID_JAG_TOKEN_TYPE) {
          throw sfError("bad_request", "invalid_request", `assertion_type must be ${ID_JAG_TOKEN_TYPE}`);
        }
        const r = await identity.identityAssertion(seller, need(body.assertion, "assertion"));
        return c.json(asIdentity(identityBody(r)), 201);
      }
      case "refresh": {
        const r = await identity.refresh(need(body.refresh_token, "refresh_token"));
        return c.json(asIdentity(identityBody(r)), 200);
      }
    }
  });

  app.openapi(claimRoute, async (c) => {
    const body = c.req.valid("json");
    const seller = await sellerOf(c, deps);
    const r = await claims.requestVerification(body.claim_token, body.login_hint as string, seller);
    return c.json({ claim: { attempt: { verification_uri: r.verificationUri, expires_in: r.expiresIn } } }, 200);
  });

  app.openapi(completeRoute, async (c) => {
    const body = c.req.valid("json");
    const r = await claims.complete(body.claim_token, body.user_code);
    return c.json(asIdentity(identityBody(r)), 200);
  });
  return app;
}
