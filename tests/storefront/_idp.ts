import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import type { Clock } from "../../core/clock.ts";
import { startServer } from "../../routes/server.ts";

/** A local identity provider: a real HTTP server on 127.0.0.1 serving its JWKS, minting ID-JAGs. */
export interface LocalIdp extends AsyncDisposable {
  issuer: string;
  jwksUrl: string;
  /** How many times the JWKS was fetched. */
  jwksHits(): number;
  /** An ID-JAG with sane defaults (valid for 5 minutes, fresh auth_time, verified e-mail); override anything. */
  mint(
    claims?: JWTPayload & Record<string, unknown>,
    header?: { typ?: string; kid?: string; alg?: string },
  ): Promise<string>;
  /** The RSA private key, for forging tests. */
  privateKey: CryptoKey;
  publicJwk: JsonWebKey & { kid?: string };
  close(): Promise<void>;
}

/**
 * Key pairs of IdPs that have closed, for the next one to start. A 2048-bit RSA pair costs about
 * 0.1 s of CPU to generate, and every storefront world starts an IdP (about 60 in the suite). IdPs
 * open at the same time never share a pair: one taken here is given back only when its IdP closes.
 */
const spareKeys: CryptoKeyPair[] = [];

/**
 * Starts a local IdP. `audience` is the default `aud` of minted ID-JAGs; `clock` sets `iat`,
 * `exp` and `auth_time` so tests move time with the service's clock.
 */
export async function startLocalIdp({ audience, clock }: { audience: string; clock: Clock }): Promise<LocalIdp> {
  const pair = spareKeys.pop() ?? await generateKeyPair("RS256", { extractable: true });
  const { privateKey, publicKey } = pair;
  const kid = "idp-key-1";
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" };
  let hits = 0;
  let issuer = "";
  const server = startServer((req) => {
    const path = new URL(req.url).pathname;
    if (path === "/jwks.json") {
      hits++;
      return Response.json({ keys: [publicJwk] });
    }
    return new Response("not found", { status: 404 });
  });
  issuer = server.url;
  let closed: Promise<void> | undefined;
  const close = () =>
    closed ??= server.shutdown(1000).then(() => {
      spareKeys.push(pair);
    });
  return {
    issuer,
    jwksUrl: `${server.url}/jwks.json`,
    jwksHits: () => hits,
    privateKey,
    publicJwk,
    async mint(claims = {}, header = {}) {
      const now = Math.floor(clock.now().getTime() / 1000);
      const payload: JWTPayload & Record<string, unknown> = {
        iss: issuer,
        sub: "user-123",
        aud: audience,
        iat: now,
        exp: now + 300,
        jti: crypto.randomUUID(),
        auth_time: now - 3600,
        email: "ada@example.com",
        email_verified: true,
        client_id: "agent-client",
        ...claims,
      };
      for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
      return await new SignJWT(payload)
        .setProtectedHeader({
          alg: header.alg ?? "RS256",
          typ: header.typ ?? "oauth-id-jag+jwt",
          kid: header.kid ?? kid,
        })
        .sign(privateKey);
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
