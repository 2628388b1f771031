import assert from "node:assert/strict";
import { OpenAPIHono } from "@hono/zod-openapi";
import { createRepos } from "../../core/store/repos.ts";
import type { DataModel } from "../../core/store/models.ts";
import type { DataModelEnv } from "../../routes/env.ts";
import { createErrorHandler } from "../../routes/errors.ts";
import { tenantDataModel } from "../../routes/middleware/data_model.ts";
import { memoryLogger } from "../../core/log.ts";

const model = (id: string, tenantId: string): DataModel => ({
  id,
  tenantId,
  name: "News",
  sites: [],
  marketplace: false,
  createdAt: "2026-11-22T12:00:00.000Z",
});

/** A tiny app: the caller is tenant `tn_mine` (what the API key check would set). */
async function tinyApp(kv: Deno.Kv) {
  const repos = createRepos(kv);
  await repos.dataModels.create(model("dm_mine", "tn_mine"));
  await repos.dataModels.create(model("dm_theirs", "tn_theirs"));
  const app = new OpenAPIHono<DataModelEnv>();
  app.onError(createErrorHandler(memoryLogger(), "message") as never);
  app.use("*", async function fakeKeyCheck(c, next) {
    c.set("tenantId", "tn_mine");
    await next();
  });
  app.use("/p/:dm", tenantDataModel({ repos, from: { param: "dm" } }));
  app.use("/q", tenantDataModel({ repos, from: { query: "data_model_id" } }));
  const answer = (c: { get(k: "dataModel"): DataModel | undefined; text(t: string): Response }) =>
    c.text(c.get("dataModel")?.id ?? "not loaded");
  app.get("/p/:dm", (c) => answer(c));
  app.get("/q", (c) => answer(c));
  return app;
}

Deno.test("tenantDataModel() loads the caller's data model from a path or query parameter", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const app = await tinyApp(kv);
    assert.equal(await (await app.request("/p/dm_mine")).text(), "dm_mine");
    assert.equal(await (await app.request("/q?data_model_id=dm_mine")).text(), "dm_mine");
  } finally {
    kv.close();
  }
});

Deno.test("tenantDataModel() answers 404 for an unknown or another tenant's data model, never echoing the id", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const app = await tinyApp(kv);
    for (const path of ["/p/dm_theirs", "/p/dm_nothere", "/q?data_model_id=dm_theirs"]) {
      const res = await app.request(path);
      assert.equal(res.status, 404, path);
      assert.deepEqual(await res.json(), { message: "Data model not found" });
    }
  } finally {
    kv.close();
  }
});

Deno.test("tenantDataModel() passes a missing or malformed id on to the route's own validation", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const app = await tinyApp(kv);
    for (const path of ["/p/nope", "/q", "/q?data_model_id=dm_" + "x".repeat(65), "/q?data_model_id=dm_a-b"]) {
      const res = await app.request(path);
      assert.equal(res.status, 200, path);
      assert.equal(await res.text(), "not loaded");
    }
  } finally {
    kv.close();
  }
});
