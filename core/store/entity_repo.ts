import { hasIdFormat, type IdPrefix } from "../ids.ts";

/** A record owned by one tenant. */
export interface TenantOwned {
  id: string;
  tenantId: string;
}

/**
 * KV repository for a tenant-owned entity kind. Records live at `[kind, id]` with a tenant index
 * at `[kind + "_by_tenant", tenantId, id]`, written together atomically.
 */
export class EntityRepo<T extends TenantOwned> {
  /**
   * @param prefix the id prefix of the kind: an id without its format is not looked up (null), so
   *   an id from a request or an event never reaches KV malformed or huge ("Key too large").
   */
  constructor(private readonly kv: Deno.Kv, readonly kind: string, readonly prefix?: IdPrefix) {}

  /** The record with this id, whatever its tenant, or null (also for an id without the kind's format). */
  async get(id: string): Promise<T | null> {
    if (this.prefix && !hasIdFormat(this.prefix, id)) return null;
    return (await this.kv.get<T>([this.kind, id])).value;
  }

  /** The record when it exists and belongs to `tenantId`; null otherwise (no cross-tenant leak). */
  async getForTenant(tenantId: string, id: string): Promise<T | null> {
    const value = await this.get(id);
    return value && value.tenantId === tenantId ? value : null;
  }

  /** Every record of the tenant, oldest first (ids sort by creation time). */
  async listByTenant(tenantId: string): Promise<T[]> {
    const ids: string[] = [];
    for await (const e of this.kv.list<string>({ prefix: [`${this.kind}_by_tenant`, tenantId] })) ids.push(e.value);
    const out: T[] = [];
    // getMany takes at most 10 keys a call.
    for (let i = 0; i < ids.length; i += 10) {
      const got = await this.kv.getMany<T[]>(ids.slice(i, i + 10).map((id) => [this.kind, id]));
      for (const e of got) if (e.value) out.push(e.value);
    }
    return out;
  }

  /** How many records the tenant has (its index keys, not the records). */
  async countByTenant(tenantId: string): Promise<number> {
    let n = 0;
    for await (const _ of this.kv.list({ prefix: [`${this.kind}_by_tenant`, tenantId] })) n++;
    return n;
  }

  /** Every record of the kind, oldest first. */
  async listAll(): Promise<T[]> {
    const out: T[] = [];
    for await (const e of this.kv.list<T>({ prefix: [this.kind] })) out.push(e.value);
    return out;
  }

  /** Inserts a new record; fails when the id is taken. */
  async create(value: T): Promise<T> {
    const res = await this.kv.atomic()
      .check({ key: [this.kind, value.id], versionstamp: null })
      .set([this.kind, value.id], value)
      .set([`${this.kind}_by_tenant`, value.tenantId, value.id], value.id)
      .commit();
    if (!res.ok) throw new Error(`${this.kind} ${value.id} already exists`);
    return value;
  }

  /**
   * Inserts a new record unless its tenant already has `max` of the kind. Exact under concurrent
   * creates: each commits only if the tenant's count guard (`[kind + "_count", tenantId]`) did not
   * move since it counted, else it counts again.
   * @returns the record, or null at the cap
   * @throws Error when the id is taken, or the creates kept conflicting
   */
  async createWithin(value: T, max: number): Promise<T | null> {
    const guardKey = [`${this.kind}_count`, value.tenantId];
    // A lost race means another create committed, so the cap is reached within `max` losses.
    for (let attempt = 0; attempt <= max + 8; attempt++) {
      const guard = await this.kv.get<Deno.KvU64>(guardKey);
      const n = await this.countByTenant(value.tenantId);
      if (n >= max) return null;
      const res = await this.kv.atomic()
        .check(guard)
        .check({ key: [this.kind, value.id], versionstamp: null })
        .set(guardKey, new Deno.KvU64(BigInt(n + 1)))
        .set([this.kind, value.id], value)
        .set([`${this.kind}_by_tenant`, value.tenantId, value.id], value.id)
        .commit();
      if (res.ok) return value;
      if ((await this.kv.get([this.kind, value.id])).versionstamp) {
        throw new Error(`${this.kind} ${value.id} already exists`);
      }
    }
    throw new Error(`${this.kind} creates kept conflicting; retry`);
  }

  /**
   * Changes an existing record by `change`, applied to the record as stored: the write commits only
   * if nobody wrote the record since it was read, else `change` runs again on the newer record, so
   * two concurrent changes of different fields both stick (a blind {@link update} keeps only the last).
   * `change` may throw to refuse; it may run more than once, so its side effects must be repeatable.
   * @returns the changed record, or null when there is no record with this id
   * @throws Error when the record kept changing under it, or `change` moved it to another tenant
   */
  async change(id: string, change: (current: T) => T | Promise<T>): Promise<T | null> {
    if (this.prefix && !hasIdFormat(this.prefix, id)) return null;
    for (let attempt = 0; attempt < 8; attempt++) {
      const current = await this.kv.get<T>([this.kind, id]);
      if (!current.value) return null;
      const next = await change(current.value);
      if (next.id !== id || next.tenantId !== current.value.tenantId) {
        throw new Error(`${this.kind} ${id} cannot change id or tenant`);
      }
      const res = await this.kv.atomic().check(current).set([this.kind, id], next).commit();
      if (res.ok) return next;
    }
    throw new Error(`${this.kind} ${id} kept changing concurrently; retry`);
  }

  /**
   * Replaces an existing record with a value made whole by the caller (its tenant cannot change). A
   * change computed from an earlier read goes through {@link change}, which cannot lose another's.
   */
  async update(value: T): Promise<T> {
    const current = await this.kv.get<T>([this.kind, value.id]);
    if (!current.value) throw new Error(`${this.kind} ${value.id} does not exist`);
    if (current.value.tenantId !== value.tenantId) throw new Error(`${this.kind} ${value.id} cannot change tenant`);
    const res = await this.kv.atomic().check(current).set([this.kind, value.id], value).commit();
    if (!res.ok) throw new Error(`${this.kind} ${value.id} changed concurrently; retry`);
    return value;
  }
}
