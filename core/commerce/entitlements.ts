/**
 * The entitlement ledger: credit held per plan, per holder, per seller, in micro-USD.
 *
 * A holder is the human who claimed the credential (`h:<humanId>`), so every credential that human
 * claimed shares the plans; an unclaimed credential holds its own (`c:<credentialId>`) and those
 * plans die with it (`expiresAt`). Money moves only inside `kv.atomic().check(...)` commits, retried
 * on conflict, and a balance never goes below zero. Debits are idempotent per request id.
 *
 * Keys: `["commerce_ent", holder, sellerId, planId]`, `["commerce_debit", sellerId, requestId]`,
 * `["commerce_debit_open", at, sellerId, requestId]` (a reservation not settled yet, by age).
 */
import { type Clock, KV_EXPIRY_SLACK_MS } from "../clock.ts";
import type { AuthenticatedAgent } from "./types.ts";

/** One plan held by one holder at one seller. */
export interface Entitlement {
  holder: string;
  sellerId: string;
  planId: string;
  /** Remaining credit (micro-USD), never negative. */
  creditMicros: number;
  /** Total ever bought or added (micro-USD). */
  purchasedMicros: number;
  createdAt: string;
  updatedAt: string;
  /** Set for plans of unclaimed credentials: they die with the credential. */
  expiresAt?: string;
}

/** A debit reserved for one proxied request. */
export interface Debit {
  requestId: string;
  credentialId: string;
  holder: string;
  planId: string;
  amountMicros: number;
  state: "reserved" | "billed" | "refunded";
  at: string;
}

/** The holder new plans of this agent are kept under. */
export const primaryHolder = (a: AuthenticatedAgent): string =>
  a.claimed && a.humanId ? `h:${a.humanId}` : `c:${a.credentialId}`;

/** Every holder whose plans this agent may use: its human's, and its own from before the claim. */
export const holdersOf = (a: AuthenticatedAgent): string[] =>
  a.claimed && a.humanId ? [`h:${a.humanId}`, `c:${a.credentialId}`] : [`c:${a.credentialId}`];

export const entKey = (holder: string, sellerId: string, planId: string): Deno.KvKey => [
  "commerce_ent",
  holder,
  sellerId,
  planId,
];
const debitKey = (sellerId: string, requestId: string): Deno.KvKey => ["commerce_debit", sellerId, requestId];
/** An open reservation, listed by credential so the allowance check sees a call already paid for. */
export const holdKey = (sellerId: string, credentialId: string, requestId: string): Deno.KvKey => [
  "commerce_hold",
  sellerId,
  credentialId,
  requestId,
];

/**
 * A reservation not settled yet, listed by when it was made: a call whose process died (or whose
 * settle failed) between reserve and settle is found here and given back.
 */
const openKey = (d: Pick<Debit, "at" | "requestId">, sellerId: string): Deno.KvKey => [
  "commerce_debit_open",
  d.at,
  sellerId,
  d.requestId,
];

// Stale reservations given back per paid call: bounded work on the request path.
const STALE_PER_CALL = 5;

const MAX_ATTEMPTS = 500;
/**
 * How long an open reservation (a proxied call paid for, in flight) counts, by the injected clock:
 * for the allowance check, and as its debit. A reservation still unsettled after it died with the
 * process that forwarded the call, and goes back (see {@link EntitlementLedger.reserve}).
 */
export const HOLD_MS = 10 * 60_000;
/** A hold as stored: until when it counts (unix ms). Older processes stored the amount alone. */
interface Hold {
  amountMicros: number;
  untilMs: number;
}
// KV keeps a hold just past its end (hasHold reads its end; returnStale finds lapsed reservations
// through their own index), so lapsed holds do not pile up under a credential.
const HOLD_KEEP = { expireIn: HOLD_MS + KV_EXPIRY_SLACK_MS };
/**
 * Age past which a reservation still `reserved` belongs to a call that will never settle it (its
 * process died, or its settle failed): the life of its hold, the longest a paid call is in flight.
 */
export const STALE_RESERVATION_MS = HOLD_MS;
/**
 * How long the debit of a call that was billed nothing (the upstream refused it) stays: the
 * call's usage receipt and a retry with its request id read it; then it goes.
 */
const UNBILLED_DEBIT_KEEP_MS = 86_400_000;

/** Result of {@link EntitlementLedger.reserve}. */
export type ReserveResult =
  | { ok: true; debit: Debit }
  | { ok: false; why: "exhausted" | "no_plan" | "duplicate" };

/** Ids of every credential a human (account) claimed; from the identity room. */
export type CredentialsOfHuman = (humanId: string) => Promise<string[]>;

export class EntitlementLedger {
  constructor(
    private readonly kv: Deno.Kv,
    private readonly clock: Clock,
    private readonly credentialsOfHuman?: CredentialsOfHuman,
  ) {}

  /**
   * Every holder whose plans this agent may use: its human's, its own, and those of every other
   * credential the same human claimed (plans such a credential bought before its claim are
   * shared from the claim on).
   */
  async holders(agent: AuthenticatedAgent): Promise<string[]> {
    const own = holdersOf(agent);
    if (!agent.claimed || !agent.humanId || !this.credentialsOfHuman) return own;
    const siblings = (await this.credentialsOfHuman(agent.humanId)).map((id) => `c:${id}`);
    return [...new Set([...own, ...siblings])];
  }

  /** Is this entitlement alive for this agent? Claimed agents keep their pre-claim plans. */
  #alive(e: Entitlement, agent: AuthenticatedAgent): boolean {
    if (!e.expiresAt || agent.claimed) return true;
    return Date.parse(e.expiresAt) > this.clock.now().getTime();
  }

  /** Entries (with versionstamps) of the agent's live plans at a seller, oldest first. */
  async entries(agent: AuthenticatedAgent, sellerId: string): Promise<Deno.KvEntry<Entitlement>[]> {
    const out: Deno.KvEntry<Entitlement>[] = [];
    for (const holder of await this.holders(agent)) {
      for await (const e of this.kv.list<Entitlement>({ prefix: ["commerce_ent", holder, sellerId] })) {
        if (this.#alive(e.value, agent)) out.push(e);
      }
    }
    return out.sort((a, b) => a.value.createdAt.localeCompare(b.value.createdAt));
  }

  /** The agent's live plans at every seller (the network view). */
  async everywhere(agent: AuthenticatedAgent): Promise<Entitlement[]> {
    const out: Entitlement[] = [];
    for (const holder of await this.holders(agent)) {
      for await (const e of this.kv.list<Entitlement>({ prefix: ["commerce_ent", holder] })) {
        if (this.#alive(e.value, agent)) out.push(e.value);
      }
    }
    return out;
  }

  /**
   * The live entitlement of `planId` a grant to this agent lands on, or null when a grant opens one:
   * top-ups land on the plan the agent already holds (its human's first, then its own, then its
   * human's other credentials') before opening a new one.
   */
  async grantTarget(
    agent: AuthenticatedAgent,
    sellerId: string,
    planId: string,
  ): Promise<Deno.KvEntry<Entitlement> | null> {
    for (const holder of await this.holders(agent)) {
      const e = await this.kv.get<Entitlement>(entKey(holder, sellerId, planId));
      if (e.value && this.#alive(e.value, agent)) return e as Deno.KvEntry<Entitlement>;
    }
    return null;
  }

  /**
   * The entitlement a grant of `amountMicros` on `planId` would write, with the entry it must check.
   * Callers commit it together with their own state change (the payment record) in one atomic op.
   */
  async prepareGrant(
    agent: AuthenticatedAgent,
    sellerId: string,
    planId: string,
    amountMicros: number,
  ): Promise<{ key: Deno.KvKey; current: Deno.KvEntryMaybe<Entitlement>; next: Entitlement }> {
    let current: Deno.KvEntryMaybe<Entitlement> | null = await this.grantTarget(agent, sellerId, planId);
    const key = current?.value ? current.key : entKey(primaryHolder(agent), sellerId, planId);
    current ??= await this.kv.get<Entitlement>(key);
    const now = this.clock.now().toISOString();
    const base: Entitlement = current.value && this.#alive(current.value, agent) ? current.value : {
      holder: String(key[1]),
      sellerId,
      planId,
      creditMicros: 0,
      purchasedMicros: 0,
      createdAt: now,
      updatedAt: now,
      ...(!agent.claimed && agent.expiresAt ? { expiresAt: agent.expiresAt } : {}),
    };
    return {
      key,
      current,
      next: {
        ...base,
        creditMicros: base.creditMicros + amountMicros,
        purchasedMicros: base.purchasedMicros + amountMicros,
        updatedAt: now,
      },
    };
  }

  /**
   * Reserves `amountMicros` for request `requestId` from the oldest live plan in `planIds` with
   * enough credit. Atomic and idempotent: a request id is debited at most once.
   */
  async reserve(
    agent: AuthenticatedAgent,
    sellerId: string,
    planIds: Set<string>,
    amountMicros: number,
    requestId: string,
  ): Promise<ReserveResult> {
    await this.returnStale();
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const entries = (await this.entries(agent, sellerId)).filter((e) => planIds.has(e.value.planId));
      if (entries.length === 0) return { ok: false, why: "no_plan" };
      const pick = entries.find((e) => e.value.creditMicros >= amountMicros);
      if (!pick) return { ok: false, why: "exhausted" };
      const debit: Debit = {
        requestId,
        credentialId: agent.credentialId,
        holder: pick.value.holder,
        planId: pick.value.planId,
        amountMicros,
        state: "reserved",
        at: this.clock.now().toISOString(),
      };
      const res = await this.kv.atomic()
        .check(pick)
        .check({ key: debitKey(sellerId, requestId), versionstamp: null })
        .set(
          pick.key,
          {
            ...pick.value,
            creditMicros: pick.value.creditMicros - amountMicros,
            updatedAt: debit.at,
          } satisfies Entitlement,
        )
        .set(debitKey(sellerId, requestId), debit)
        .set(holdKey(sellerId, agent.credentialId, requestId), this.#hold(amountMicros), HOLD_KEEP)
        .set(openKey(debit, sellerId), true)
        .commit();
      if (res.ok) return { ok: true, debit };
      if ((await this.kv.get(debitKey(sellerId, requestId))).versionstamp) return { ok: false, why: "duplicate" };
    }
    throw new Error("entitlement debit did not commit after many attempts");
  }

  /**
   * Settles a reserved debit at the billed amount: the difference goes back to the plan (or, when
   * the bill is higher, is taken as far as the credit allows, never below zero). Idempotent: only a
   * `reserved` debit moves.
   * @returns the amount finally billed.
   */
  async settle(sellerId: string, requestId: string, billedMicros: number): Promise<number> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const d = await this.kv.get<Debit>(debitKey(sellerId, requestId));
      if (!d.value || d.value.state !== "reserved") return d.value?.state === "billed" ? d.value.amountMicros : 0;
      const eKey = entKey(d.value.holder, sellerId, d.value.planId);
      if (billedMicros === d.value.amountMicros) {
        const res = await this.kv.atomic().check(d).set(d.key, { ...d.value, state: "billed" } satisfies Debit)
          .delete(holdKey(sellerId, d.value.credentialId, requestId)).delete(openKey(d.value, sellerId)).commit();
        if (res.ok) return billedMicros;
        continue;
      }
      const e = await this.kv.get<Entitlement>(eKey);
      const credit = e.value?.creditMicros ?? 0;
      const delta = d.value.amountMicros - billedMicros; // > 0: give back; < 0: take more
      const change = delta > 0 ? delta : -Math.min(credit, -delta);
      const billed = d.value.amountMicros - change;
      const op = this.kv.atomic().check(d).check(e).delete(holdKey(sellerId, d.value.credentialId, requestId))
        .delete(openKey(d.value, sellerId))
        .set(
          d.key,
          { ...d.value, amountMicros: billed, state: billed === 0 ? "refunded" : "billed" } satisfies Debit,
          // A call that cost nothing is no one's record: an agent with a cent of credit could
          // otherwise leave one for good per refused call.
          billed === 0 ? { expireIn: UNBILLED_DEBIT_KEEP_MS } : undefined,
        );
      if (e.value) {
        op.set(
          eKey,
          {
            ...e.value,
            creditMicros: credit + change,
            updatedAt: this.clock.now().toISOString(),
          } satisfies Entitlement,
        );
      }
      if ((await op.commit()).ok) return billed;
    }
    throw new Error("entitlement settle did not commit after many attempts");
  }

  /**
   * Gives back the oldest reservations left `reserved` past {@link STALE_RESERVATION_MS} (at most
   * `limit`), settled at nothing: their call's process died, or its settle failed, so the agent was
   * never billed for an answer it may not have had. Run by the commerce sweep (settle_sweep.ts), so a
   * quiet storefront gives the credit back too, and on every reserve, a few at a time. Each moves in
   * one commit checked against the debit read ({@link settle}): a late settle of its call, or another
   * sweep, finds it settled and moves nothing.
   * @returns how many stale listings were handled
   */
  async returnStale(limit = STALE_PER_CALL): Promise<number> {
    // Made at or before now - STALE_RESERVATION_MS (the list's end is exclusive; ISO times are to the
    // millisecond): the instant its hold lapses ({@link hasHold}).
    const cutoff = new Date(this.clock.now().getTime() - STALE_RESERVATION_MS + 1).toISOString();
    const stale = this.kv.list<true>({ prefix: ["commerce_debit_open"], end: ["commerce_debit_open", cutoff] }, {
      limit,
    });
    let handled = 0;
    for await (const e of stale) {
      const [, , sellerId, requestId] = e.key as [string, string, string, string];
      await this.settle(sellerId, requestId, 0);
      // Settled meanwhile by its own call, whose commit already removed it: this is a no-op.
      await this.kv.atomic().check(e).delete(e.key).commit();
      handled++;
    }
    return handled;
  }

  /** The debit of one proxied request, or null. */
  async debit(sellerId: string, requestId: string): Promise<Debit | null> {
    return (await this.kv.get<Debit>(debitKey(sellerId, requestId))).value;
  }

  /**
   * Marks a paid call of this credential in flight (a pay-as-you-go call paid before it is
   * forwarded), so the upstream's allowance check sees it; {@link endCall} removes the mark.
   */
  async holdCall(sellerId: string, credentialId: string, requestId: string, amountMicros: number): Promise<void> {
    await this.kv.set(holdKey(sellerId, credentialId, requestId), this.#hold(amountMicros), HOLD_KEEP);
  }

  /** Ends what {@link holdCall} started. */
  async endCall(sellerId: string, credentialId: string, requestId: string): Promise<void> {
    await this.kv.delete(holdKey(sellerId, credentialId, requestId));
  }

  /** Does the credential hold an open reservation at this seller (a proxied call in flight)? */
  async hasHold(sellerId: string, credentialId: string): Promise<boolean> {
    const now = this.clock.now().getTime();
    const holds = this.kv.list<Hold | number>({ prefix: ["commerce_hold", sellerId, credentialId] }, { limit: 100 });
    for await (const h of holds) {
      // A hold an older process wrote (the amount alone) lives as KV kept it.
      if (typeof h.value === "number" || h.value.untilMs > now) return true;
    }
    return false;
  }

  #hold(amountMicros: number): Hold {
    return { amountMicros, untilMs: this.clock.now().getTime() + HOLD_MS };
  }
}
