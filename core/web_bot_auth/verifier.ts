/**
 * Agent identity from Web Bot Auth (HTTP Message Signatures, RFC 9421, with a `Signature-Agent`
 * key directory), verified by mppx's verifier: the key comes from the directory the signed
 * `Signature-Agent` names, each nonce is used once (KV), and the signature's lifetime is bounded.
 * The result names the directory's host only when everything verified; a request whose signature
 * is missing parts, expired, replayed or wrong is `unverified`, never the name it claims.
 */
import type { Server } from "mppx/attestation/web-bot-auth";
import { lazily } from "../lazily.ts";
import type { Logger } from "../log.ts";
import type { SafeFetcher } from "../net/mod.ts";
import { KeyDirectories } from "./directory.ts";
import { kvNonceStore } from "./nonce_store.ts";

/** Longest signature lifetime accepted (the draft recommends short ones; mppx signs for 60 s). */
export const MAX_SIGNATURE_LIFETIME_S = 300;

/**
 * How far a signature's `created` may be ahead of our clock (a signer whose clock runs a little
 * fast). RFC 9421 leaves the skew to the verifier; `expires` gets none: an expired signature is refused.
 */
export const SIGNATURE_CLOCK_SKEW_S = 5;

/** What a request says about the agent behind it. */
export type BotIdentity =
  /** No Web Bot Auth material at all. */
  | { status: "absent" }
  /** Signed and verified: the directory host is who it is. */
  | { status: "verified"; directoryHost: string; keyId: string }
  /** Signature material present but it did not verify (the claimed name is not used). */
  | { status: "unverified" };

/** Verifies Web Bot Auth signatures of incoming requests. */
export class WebBotAuth {
  /** mppx's verifier, built on the first signed request: mppx takes about 300 ms to import. */
  readonly #verifier: () => Promise<ReturnType<typeof Server.verifier>>;
  readonly #isOwnAuthority: (authority: string) => boolean | Promise<boolean>;
  readonly #clockMs: () => number;

  /**
   * @param o.signatureClockMs the clock signature lifetimes are judged on, by the nonce store and,
   * lent for the call ({@link judgedBy}), by mppx's verifier, which reads `Date.now()` itself.
   * @param o.isOwnAuthority whether a request's `host[:port]` is one this service is reached at.
   * The signed `@authority` is read from the request's URL, that is its Host header, which the
   * sender picks: a signature the agent made for another site (the profile covers nothing but
   * `@authority` and `Signature-Agent`) would verify here when replayed with that site's Host.
   */
  constructor(
    o: {
      kv: Deno.Kv;
      fetcher: SafeFetcher;
      log: Logger;
      signatureClockMs: () => number;
      isOwnAuthority: (authority: string) => boolean | Promise<boolean>;
    },
  ) {
    this.#isOwnAuthority = o.isOwnAuthority;
    this.#clockMs = o.signatureClockMs;
    const directories = new KeyDirectories({ fetcher: o.fetcher, log: o.log });
    this.#verifier = lazily(async () => {
      const { Server } = await import("mppx/attestation/web-bot-auth");
      return Server.verifier({
        // mppx calls this before its first await, still inside judgedBy()'s window: a microtask first,
        // so none of our code (the directory cache, its fetch) runs on the lent clock.
        keyResolver: async ({ signatureAgent, keyId, algorithm }) => {
          await undefined;
          return await directories.resolve(signatureAgent, keyId, algorithm);
        },
        nonceStore: kvNonceStore(o.kv, o.signatureClockMs),
        maxAge: MAX_SIGNATURE_LIFETIME_S,
      });
    });
  }

  /** Whether a request carries Web Bot Auth material worth verifying (cheap; no I/O). */
  static present(headers: Headers): boolean {
    return headers.has("signature-input") || headers.has("signature") || headers.has("signature-agent");
  }

  /** The agent identity of a request. */
  async identify(req: Request): Promise<BotIdentity> {
    if (!WebBotAuth.present(req.headers)) return { status: "absent" };
    // Signed for someone else: not verified, and no directory is fetched for it.
    if (!(await this.#isOwnAuthority(new URL(req.url).host))) return { status: "unverified" };
    const verifier = await this.#verifier();
    let result;
    try {
      result = await judgedBy(verifierClockMs(req.headers, this.#clockMs()), () => verifier.verify(req));
    } catch {
      return { status: "unverified" };
    }
    if (result.status !== "verified") return { status: "unverified" };
    return {
      status: "verified",
      directoryHost: new URL(result.value.signatureAgent).host,
      keyId: result.value.keyId,
    };
  }
}

/**
 * The instant mppx's verifier should judge a request's signature at, so that `created` may be up to
 * {@link SIGNATURE_CLOCK_SKEW_S} ahead of `nowMs` and `expires` must still be after it. mppx checks
 * `created > now` and `expires <= now` against one `now`; for a signature made ahead of us that `now`
 * is its `created`, at most the skew ahead of ours: an expired signature (`expires <= nowMs <
 * created`) or one without a lifetime (`expires <= created`) stays refused. Whatever the header says,
 * the instant is never before `nowMs` nor more than the skew after it.
 */
function verifierClockMs(headers: Headers, nowMs: number): number {
  const nowS = Math.floor(nowMs / 1000);
  let created = nowS;
  // Every `created` the header names (mppx picks the label tagged web-bot-auth): the latest only
  // makes the expiry check stricter for the others.
  for (const m of (headers.get("signature-input") ?? "").matchAll(/;\s*created=(\d{1,12})\b/g)) {
    created = Math.max(created, Number(m[1]));
  }
  return created <= nowS ? nowMs : Math.min(created, nowS + SIGNATURE_CLOCK_SKEW_S) * 1000;
}

/**
 * Runs `verify` with `Date.now()` reading `ms` while it runs synchronously: mppx's verifier takes its
 * `now` before its first await and has no clock option. Nothing else runs in that window, and
 * `Date.now` is itself again before any other code does (the key resolver waits a microtask first).
 */
function judgedBy<T>(ms: number, verify: () => T): T {
  const wallClock = Date.now;
  Date.now = () => ms;
  try {
    return verify();
  } finally {
    Date.now = wallClock;
  }
}

/** The caller identity recorded for a request's events (agent readership). */
export function botCaller(identity: BotIdentity): string | undefined {
  if (identity.status === "verified") return `webbot:${identity.directoryHost}`;
  if (identity.status === "unverified") return UNVERIFIED_BOT_CALLER;
  return undefined;
}

/** The caller of signed requests that did not verify: counted, never under the name they claim. */
export const UNVERIFIED_BOT_CALLER = "webbot-unverified";

/**
 * The authorities (`host[:port]`) this service is reached at: those of `urls` (BASE_URL,
 * AGENT_AUTH_URL) and any `other` says are ours (a seller's own host).
 */
export function ownAuthorities(
  urls: string[],
  other: (authority: string) => Promise<boolean>,
): (authority: string) => boolean | Promise<boolean> {
  const fixed = new Set(urls.map((u) => new URL(u).host));
  return (authority) => fixed.has(authority.toLowerCase()) || other(authority);
}
