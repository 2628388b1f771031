import { EntityRepo } from "./entity_repo.ts";
import type { AiModel, Campaign, DataModel, Prompt, Tenant, Widget } from "./models.ts";

/** Tenants: `["tenant", id]`. */
export class TenantRepo {
  constructor(private readonly kv: Deno.Kv) {}

  async get(id: string): Promise<Tenant | null> {
    return (await this.kv.get<Tenant>(["tenant", id])).value;
  }

  async list(): Promise<Tenant[]> {
    const out: Tenant[] = [];
    for await (const e of this.kv.list<Tenant>({ prefix: ["tenant"] })) out.push(e.value);
    return out;
  }

  async create(tenant: Tenant): Promise<Tenant> {
    const res = await this.kv.atomic().check({ key: ["tenant", tenant.id], versionstamp: null })
      .set(["tenant", tenant.id], tenant).commit();
    if (!res.ok) throw new Error(`tenant ${tenant.id} already exists`);
    return tenant;
  }

  /** Replaces an existing tenant record (e.g. its plan flags). */
  async update(tenant: Tenant): Promise<Tenant> {
    const current = await this.kv.get<Tenant>(["tenant", tenant.id]);
    if (!current.value) throw new Error(`tenant ${tenant.id} does not exist`);
    const res = await this.kv.atomic().check(current).set(["tenant", tenant.id], tenant).commit();
    if (!res.ok) throw new Error(`tenant ${tenant.id} changed concurrently; retry`);
    return tenant;
  }
}

/** Every KV repository of the configuration entities. */
export interface Repos {
  tenants: TenantRepo;
  dataModels: EntityRepo<DataModel>;
  aiModels: EntityRepo<AiModel>;
  widgets: EntityRepo<Widget>;
  campaigns: EntityRepo<Campaign>;
  prompts: EntityRepo<Prompt>;
}

/** Builds the repositories over one KV handle. */
export function createRepos(kv: Deno.Kv): Repos {
  return {
    tenants: new TenantRepo(kv),
    dataModels: new EntityRepo<DataModel>(kv, "data_model", "dm"),
    aiModels: new EntityRepo<AiModel>(kv, "ai_model", "am"),
    widgets: new EntityRepo<Widget>(kv, "widget", "wd"),
    campaigns: new EntityRepo<Campaign>(kv, "campaign", "cp"),
    // Prompt ids are hand-made in fixtures (`pm_fixture_1`): no format check.
    prompts: new EntityRepo<Prompt>(kv, "prompt"),
  };
}
