import type { DataModel } from "../../core/store/models.ts";
import { newId } from "../../core/ids.ts";
import { bearer, createTestWorld, type TestWorld } from "../_helpers.ts";

/** A test world with one tenant, its key and a data model over three sites. */
export async function searchWorld(options: Parameters<typeof createTestWorld>[0] = {}) {
  const w = await createTestWorld(options);
  const { tenantId, key } = await w.tenantWithKey();
  const dm = await w.deps.repos.dataModels.create(
    {
      id: newId("dm", w.clock),
      tenantId,
      name: "News",
      sites: [
        { domain: "alpha.example", name: "Alpha News" },
        { domain: "beta.example", name: "Beta Times" },
        { domain: "gamma.example", name: "Gamma Post" },
      ],
      marketplace: false,
      createdAt: w.clock.now().toISOString(),
    } satisfies DataModel,
  );
  return Object.assign(w, { tenantId, key, dm });
}

/** Hours before the world's fixed clock, as ISO. */
export const hoursAgo = (w: TestWorld, h: number) => new Date(w.clock.now().getTime() - h * 3_600_000).toISOString();

/** POSTs a search and returns status and parsed body. */
export async function search(
  w: TestWorld & { key: string; dm: DataModel },
  body: unknown,
  { dmId = w.dm.id, key = w.key }: { dmId?: string; key?: string } = {},
) {
  const res = await w.app.request(`/app/v2/search?data_model_id=${dmId}`, {
    method: "POST",
    headers: { ...bearer(key), "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  // deno-lint-ignore no-explicit-any
  let json: any = undefined;
  try {
    json = JSON.parse(text);
  } catch { /* text/plain */ }
  return { status: res.status, text, json, headers: res.headers };
}
