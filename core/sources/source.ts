/**
 * Content sources of a data model (RSS, Atom, JSON Feed, sitemap) and their polling state, in
 * Deno KV. The source is what its owner configured (`["source", dmId, id]`, with a by-id index
 * `["source_by_id", id]`); its state is what the poller learned (`["source_state", id]`), kept
 * apart so an edit and a poll never overwrite each other.
 */
import { z } from "zod";
import type { Clock } from "../clock.ts";
import { newId } from "../ids.ts";

export const SOURCE_KINDS = ["rss", "atom", "jsonfeed", "sitemap"] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

/** A registered source (`src_`). */
export interface Source {
  id: string;
  dataModelId: string;
  tenantId: string;
  type: SourceKind;
  url: string;
  intervalS: number;
  /** Fetch the article page when an item carries only a summary (always on for sitemaps). */
  fetchPages: boolean;
  createdAt: string;
}

/** What the poller knows about a source. Times are ISO 8601 UTC. */
export interface SourceState {
  lastPolledAt?: string;
  lastOkAt?: string;
  /** Our own words for the last failure (never the origin's body or a library's message). */
  lastError?: string;
  /** `ok`, `not_modified` or `error` of the last poll. */
  lastStatus?: "ok" | "not_modified" | "error";
  nextPollAt: string;
  itemsAdded: number;
  itemsUpdated: number;
  etag?: string;
  lastModified?: string;
  /** Failed polls in a row; drives the backoff. */
  failures: number;
}

/** The public view of a source with its status (API and admin). */
export interface SourceView {
  id: string;
  data_model_id: string;
  type: SourceKind;
  url: string;
  interval_s: number;
  fetch_pages: boolean;
  created_at: string;
  last_polled_at: string | null;
  last_ok_at: string | null;
  last_status: string | null;
  last_error: string | null;
  next_poll_at: string;
  items_added: number;
  items_updated: number;
  consecutive_failures: number;
  etag: string | null;
  last_modified: string | null;
}

/** Limits of source registration (from config; documented in docs/sources.md). */
export interface SourceLimits {
  minIntervalS: number;
  maxIntervalS: number;
  maxPerDataModel: number;
}

/** The registration body, checked against the limits. */
export function sourceInputSchema(limits: SourceLimits) {
  return z.object({
    type: z.enum(SOURCE_KINDS, { error: `must be one of ${SOURCE_KINDS.join(", ")}` }),
    url: z.string().trim().min(1, { error: "must not be empty" }).max(2048, {
      error: "must be at most 2048 characters",
    }),
    interval_s: z.number({ error: "must be a number of seconds" }).int({ error: "must be a whole number of seconds" })
      .min(limits.minIntervalS, { error: `must be at least ${limits.minIntervalS} seconds` })
      .max(limits.maxIntervalS, { error: `must be at most ${limits.maxIntervalS} seconds` }),
    fetch_pages: z.boolean({ error: "must be true or false" }).optional(),
  });
}
export type SourceInput = z.infer<ReturnType<typeof sourceInputSchema>>;

/** The public view of a source. */
export function sourceView(s: Source, st: SourceState | null): SourceView {
  return {
    id: s.id,
    data_model_id: s.dataModelId,
    type: s.type,
    url: s.url,
    interval_s: s.intervalS,
    fetch_pages: s.fetchPages,
    created_at: s.createdAt,
    last_polled_at: st?.lastPolledAt ?? null,
    last_ok_at: st?.lastOkAt ?? null,
    last_status: st?.lastStatus ?? null,
    last_error: st?.lastError ?? null,
    next_poll_at: st?.nextPollAt ?? s.createdAt,
    items_added: st?.itemsAdded ?? 0,
    items_updated: st?.itemsUpdated ?? 0,
    consecutive_failures: st?.failures ?? 0,
    etag: st?.etag ?? null,
    last_modified: st?.lastModified ?? null,
  };
}

const sourceKey = (dmId: string, id: string) => ["source", dmId, id];
const byIdKey = (id: string) => ["source_by_id", id];
const stateKey = (id: string) => ["source_state", id];

/** Why a source could not be added. */
export class SourceLimitError extends Error {
  // The public words are the sources catalog's (errors.ts); this says which refusal it is.
  constructor(readonly code: "source_limit_reached" | "source_exists") {
    super(code);
    this.name = "SourceLimitError";
  }
}

/** Throws {@link SourceLimitError} when `existing` already has `fields`' URL of its type, or is at the cap. */
function assertRoom(existing: readonly Source[], fields: Pick<Source, "url" | "type">, maxPerDataModel: number): void {
  if (existing.some((s) => s.url === fields.url && s.type === fields.type)) throw new SourceLimitError("source_exists");
  if (existing.length >= maxPerDataModel) throw new SourceLimitError("source_limit_reached");
}

/** Sources and their state in KV. */
export class SourceRepo {
  constructor(private readonly kv: Deno.Kv, private readonly clock: Clock) {}

  /** Sources of a data model, oldest first. */
  async list(dataModelId: string): Promise<Source[]> {
    const out: Source[] = [];
    for await (const e of this.kv.list<Source>({ prefix: ["source", dataModelId] })) out.push(e.value);
    return out;
  }

  /** Every source of every data model (the poller's worklist; bounded by the per-model cap). */
  async listAll(): Promise<Source[]> {
    const out: Source[] = [];
    for await (const e of this.kv.list<Source>({ prefix: ["source"] })) out.push(e.value);
    return out;
  }

  async get(id: string): Promise<Source | null> {
    const dmId = (await this.kv.get<string>(byIdKey(id))).value;
    return dmId ? (await this.kv.get<Source>(sourceKey(dmId, id))).value : null;
  }

  async state(id: string): Promise<Deno.KvEntryMaybe<SourceState>> {
    return await this.kv.get<SourceState>(stateKey(id));
  }

  /** States of many sources, in order (null where none yet). */
  async states(ids: string[]): Promise<(SourceState | null)[]> {
    const out: (SourceState | null)[] = [];
    for (let i = 0; i < ids.length; i += 10) {
      const got = await this.kv.getMany<SourceState[]>(ids.slice(i, i + 10).map(stateKey));
      for (const g of got) out.push(g.value);
    }
    return out;
  }

  /**
   * Throws what {@link add} would for `fields` now (a duplicate, or the cap reached), so a caller can
   * refuse before doing work for a source that cannot be added. `add` checks again, atomically.
   * @throws {SourceLimitError} at the cap, or when the model already has this URL
   */
  async assertRoom(fields: Pick<Source, "dataModelId" | "url" | "type">, maxPerDataModel: number): Promise<void> {
    assertRoom(await this.list(fields.dataModelId), fields, maxPerDataModel);
  }

  /**
   * Adds a source, first poll due now. The per-model cap and URL uniqueness hold under
   * concurrent adds: the add commits only if the model's source list did not change meanwhile.
   * @throws {SourceLimitError} at the cap, or when the model already has this URL
   */
  async add(
    fields: Omit<Source, "id" | "createdAt">,
    maxPerDataModel: number,
  ): Promise<Source> {
    const countKey = ["source_count", fields.dataModelId];
    for (let attempt = 0; attempt < 8; attempt++) {
      const count = await this.kv.get<Deno.KvU64>(countKey);
      const existing = await this.list(fields.dataModelId);
      assertRoom(existing, fields, maxPerDataModel);
      const now = this.clock.now().toISOString();
      const source: Source = { ...fields, id: newId("src", this.clock), createdAt: now };
      const state: SourceState = { nextPollAt: now, itemsAdded: 0, itemsUpdated: 0, failures: 0 };
      const res = await this.kv.atomic().check(count)
        .set(countKey, new Deno.KvU64(BigInt(existing.length + 1)))
        .set(sourceKey(source.dataModelId, source.id), source)
        .set(byIdKey(source.id), source.dataModelId)
        .set(stateKey(source.id), state)
        .commit();
      if (res.ok) return source;
    }
    throw new Error("source add kept conflicting; try again");
  }

  /** Removes a source and its state; false when it does not exist. */
  async remove(source: Source): Promise<boolean> {
    const countKey = ["source_count", source.dataModelId];
    for (let attempt = 0; attempt < 8; attempt++) {
      const count = await this.kv.get<Deno.KvU64>(countKey);
      const cur = await this.kv.get<Source>(sourceKey(source.dataModelId, source.id));
      if (!cur.value) return false;
      const n = count.value ? count.value.value : 1n;
      const res = await this.kv.atomic().check(count).check(cur)
        .set(countKey, new Deno.KvU64(n > 0n ? n - 1n : 0n))
        .delete(cur.key)
        .delete(byIdKey(source.id))
        .delete(stateKey(source.id))
        .commit();
      if (res.ok) return true;
    }
    throw new Error("source removal kept conflicting; try again");
  }

  /**
   * Writes the state after a poll, unless the source was deleted meanwhile (a poll in flight
   * must not bring a deleted source's state back).
   */
  async saveState(source: Source, state: SourceState): Promise<boolean> {
    const cur = await this.kv.get<Source>(sourceKey(source.dataModelId, source.id));
    if (!cur.value) return false;
    const res = await this.kv.atomic().check(cur).set(stateKey(source.id), state).commit();
    return res.ok;
  }
}
