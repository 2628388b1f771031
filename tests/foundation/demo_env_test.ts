import assert from "node:assert/strict";
import { seedDemo } from "../../fixtures/demo.ts";
import { DEMO_ENV_FILE, writeDemoEnv } from "../../fixtures/demo_env.ts";
import { bearer, createTestWorld } from "../_helpers.ts";

/** Reads `export NAME=value  # why` lines the way a shell's `source` would see them. */
function parseEnv(text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const m of text.matchAll(/^export ([A-Z0-9_]+)=(\S+)/gm)) vars[m[1]!] = m[2]!;
  return vars;
}

Deno.test("writeDemoEnv() writes the demo key and ids, owner-readable only, and they work on the API", async () => {
  await using w = await createTestWorld();
  const dir = await Deno.makeTempDir({ prefix: "svc-demo-env-" });
  try {
    const seeded = await seedDemo(w.deps);
    const path = `${dir}/${DEMO_ENV_FILE}`;
    // A leftover file with a looser mode is replaced, not reused.
    await Deno.writeTextFile(path, "old", { mode: 0o644 });
    await writeDemoEnv(path, seeded, "http://127.0.0.1:8000");

    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    const vars = parseEnv(await Deno.readTextFile(path));
    assert.equal(vars.KEY, seeded.apiKey);
    assert.equal(vars.OPERATOR_KEY, seeded.operatorKey);
    assert.equal(vars.DM, seeded.ids.dataModelId);
    assert.equal(vars.DM2, seeded.ids.secondDataModelId);
    assert.equal(vars.AM, seeded.ids.aiModelId);
    assert.equal(vars.WD, seeded.ids.widgetId);
    assert.equal(vars.BASE, "http://127.0.0.1:8000");

    const res = await w.app.request("/v1/data-models", { headers: bearer(vars.KEY!) });
    assert.equal(res.status, 200);
    assert.ok((await res.json()).data.some((dm: { id: string }) => dm.id === vars.DM));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeDemoEnv() refuses a seed result without its key (a restart never rewrites the file)", async () => {
  await using w = await createTestWorld();
  await seedDemo(w.deps);
  const again = await seedDemo(w.deps);
  await assert.rejects(() => writeDemoEnv("/nonexistent/demo.env", again, "http://x"), /needs the API key/);
});
