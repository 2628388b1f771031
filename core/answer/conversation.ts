/**
 * Follow-up turns of real-time answers: a question's history comes either with the request
 * (`messages`) or from a conversation the service keeps for 30 minutes in KV (`conversation_id`).
 * A follow-up is made standalone (core/answer/followup.ts) before retrieval; the rewritten query
 * is what the engine answers and what `explain` shows.
 */
import { z } from "zod";
import { type Clock, KV_EXPIRY_SLACK_MS } from "../clock.ts";
import type { AppError } from "../errors.ts";
import { answerErrors } from "./errors.ts";
import { newId } from "../ids.ts";
import { type ConversationTurn, standaloneQuery } from "./followup.ts";

/** How long a conversation lives after its last turn. */
export const CONVERSATION_TTL_MS = 30 * 60_000;
/** Most turns a request's `messages` may hold, and a kept conversation remembers. */
export const MAX_TURNS = 20;
/** Characters kept per turn (a long answer is remembered by its opening). */
export const MAX_TURN_CHARS = 2000;
/**
 * Characters a kept conversation holds in all: KV refuses values over 64 KiB, and a character
 * outside Latin-1 takes two bytes, so 20 full turns (80,000 bytes) would not fit. The oldest turns
 * go first.
 */
export const MAX_KEPT_CHARS = 24_000;
const CONVERSATION_ID = /^cv_[0-9a-z]{26}$/;
/** Rounds of check-and-set a turn gets against other turns kept at the same time. */
const MAX_KEEP_ATTEMPTS = 5;

/** The conversation fields of a real-time request (REST body and MCP `ask`). */
export const conversationFields = {
  messages: z.array(
    z.object({
      role: z.enum(["user", "assistant"], { error: "role must be user or assistant" }),
      content: z.string({ error: "content must be a string" }).max(20_000, {
        error: "content must be at most 20000 characters",
      }),
    }, { error: "must be an object with role and content" }),
    { error: "must be an array of {role, content}" },
  ).max(MAX_TURNS, { error: `at most ${MAX_TURNS} messages` }).optional().describe(
    "Earlier turns, oldest first; a follow-up such as 'and what did the mayor say?' is read in their light",
  ),
  conversation: z.literal(true, { error: "must be true" }).optional().describe(
    "Starts a conversation the service keeps for 30 minutes; the answer carries its `conversation_id`",
  ),
  conversation_id: z.string({ error: "must be a string" }).regex(CONVERSATION_ID, {
    error: "is not in the correct format",
  }).optional().describe("Continues a conversation (`cv_...`) the service keeps; its turns are the history"),
  explain: z.boolean({ error: "must be true or false" }).optional().describe(
    "Adds `explain` with the standalone query the follow-up was rewritten to",
  ),
};

/** The conversation fields as a request carries them (already shape-checked). */
export interface ConversationRequest {
  messages?: ConversationTurn[];
  conversation?: true;
  conversation_id?: string;
  explain?: boolean;
}

/** A conversation as kept in KV. */
interface StoredConversation {
  aiModelId: string;
  turns: ConversationTurn[];
  /** Unix ms; checked against the clock (KV's own expiry follows the wall clock and may lag). */
  expiresAt: number;
}

/** What a turn is answered with, and how to remember it. */
export interface PreparedTurn {
  /** The query to retrieve and answer with (the question itself, or made standalone). */
  query: string;
  /** The conversation this turn belongs to, when one is kept. */
  conversationId?: string;
  /** Turns before this one. */
  history: ConversationTurn[];
  /** Of {@link history}: the kept turns as read, and the ones the request added (`messages`). */
  kept?: ConversationTurn[];
  added?: ConversationTurn[];
  /**
   * The conversation's entry as {@link ConversationStore.prepare} read it (versionstamp null: a new
   * one): {@link ConversationStore.remember} writes against it without reading the key again.
   */
  read?: Deno.KvEntryMaybe<StoredConversation>;
}

export const conversationNotFound = (): AppError => answerErrors.conversation_not_found();

const clipTurn = (t: ConversationTurn): ConversationTurn => ({
  role: t.role,
  content: t.content.replace(/\s+/g, " ").trim().slice(0, MAX_TURN_CHARS),
});

/** Conversations kept in KV for {@link CONVERSATION_TTL_MS} after their last turn, per tenant. */
export class ConversationStore {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  #key(tenantId: string, id: string): Deno.KvKey {
    return ["conversation", tenantId, id];
  }

  /**
   * The standalone query of a turn and its history.
   * @throws {AppError} 404 when `conversation_id` names no live conversation of this tenant and model
   */
  async prepare(
    tenantId: string,
    aiModelId: string,
    query: string,
    request: ConversationRequest,
  ): Promise<PreparedTurn> {
    const added = (request.messages ?? []).map(clipTurn);
    let history = added;
    let kept: ConversationTurn[] = [];
    let conversationId: string | undefined;
    let read: Deno.KvEntryMaybe<StoredConversation> | undefined;
    if (request.conversation_id) {
      read = await this.kv.get<StoredConversation>(this.#key(tenantId, request.conversation_id));
      const stored = this.#live(read.value, aiModelId);
      if (!stored) throw conversationNotFound();
      conversationId = request.conversation_id;
      kept = stored.turns;
      history = [...kept, ...added].slice(-MAX_TURNS);
    } else if (request.conversation) {
      conversationId = newId("cv", this.clock);
      read = { key: this.#key(tenantId, conversationId), value: null, versionstamp: null };
    }
    return { query: standaloneQuery(query, history, MAX_TURN_CHARS), conversationId, history, kept, added, read };
  }

  #live(stored: StoredConversation | null, aiModelId: string): StoredConversation | null {
    return stored && stored.aiModelId === aiModelId && stored.expiresAt > this.clock.now().getTime() ? stored : null;
  }

  /** Remembers a turn (question and answer) of a kept conversation and renews its 30 minutes. */
  async remember(tenantId: string, aiModelId: string, turn: PreparedTurn, question: string, answer: string) {
    if (!turn.conversationId) return;
    const key = this.#key(tenantId, turn.conversationId);
    const fresh = [...turn.added ?? [], { role: "user" as const, content: question }, {
      role: "assistant" as const,
      content: answer,
    }];
    // Another turn of this conversation may have been kept while this one was answered: this
    // turn goes after it (check-and-set), rather than writing over it with the history as read.
    // The first round writes against the entry prepare() read; the key is read again only when
    // another turn was kept in between.
    let current = turn.read ?? await this.kv.get<StoredConversation>(key);
    for (let attempt = 0; attempt < MAX_KEEP_ATTEMPTS; attempt++) {
      if (attempt > 0) current = await this.kv.get<StoredConversation>(key);
      const before = this.#live(current.value, aiModelId)?.turns ?? turn.kept ?? turn.history;
      const turns = [...before, ...fresh].map(clipTurn).slice(-MAX_TURNS);
      let kept = turns.reduce((n, t) => n + t.content.length, 0);
      while (kept > MAX_KEPT_CHARS) kept -= turns.shift()!.content.length;
      const expiresAt = this.clock.now().getTime() + CONVERSATION_TTL_MS;
      const value: StoredConversation = { aiModelId, turns, expiresAt };
      const done = await this.kv.atomic().check(current).set(key, value, {
        expireIn: CONVERSATION_TTL_MS + KV_EXPIRY_SLACK_MS,
      }).commit();
      if (done.ok) return;
    }
    throw new Error("conversation turn not kept: too many concurrent turns");
  }
}

/** The response fields a turn adds: `conversation_id` when kept, `explain` when asked. */
export function turnFields(turn: PreparedTurn, request: ConversationRequest): Record<string, unknown> {
  return {
    ...(turn.conversationId ? { conversation_id: turn.conversationId } : {}),
    ...(request.explain ? { explain: { query: turn.query, history_turns: turn.history.length } } : {}),
  };
}
