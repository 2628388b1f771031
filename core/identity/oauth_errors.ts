import { AppError } from "../errors.ts";

/**
 * The OAuth 2.1 errors of the authorization code flow, declared once (RFC 6749 section 5.2,
 * RFC 7591 section 3.2.2, RFC 8707 section 2). Rendered as `{error, error_description}` by the
 * `/oauth2` family; the authorization endpoint sends the code back to the client's redirect URI.
 */
export const oauthErrors = {
  invalidRequest: (message: string) => new AppError(400, "invalid_request", message),
  invalidGrant: (message: string) => new AppError(400, "invalid_grant", message),
  invalidClient: () =>
    new AppError(401, "invalid_client", "Unknown client: register again at the registration endpoint"),
  invalidTarget: (message = "resource must be the MCP endpoint or the storefront") =>
    new AppError(400, "invalid_target", message),
  unsupportedResponseType: () => new AppError(400, "unsupported_response_type", "response_type must be code"),
  invalidRedirectUri: (message: string) => new AppError(400, "invalid_redirect_uri", message),
  invalidClientMetadata: (message: string) => new AppError(400, "invalid_client_metadata", message),
  accessDenied: () => new AppError(403, "access_denied", "The human denied the request"),
} as const;
