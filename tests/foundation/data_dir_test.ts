import assert from "node:assert/strict";
import { openDeps } from "../../main.ts";
import { parseConfig } from "../../core/config.ts";

Deno.test("openDeps() creates DATA_DIR and the KV's folder owner-only: the KV holds payproxy secrets and signing keys", async () => {
  // demo.env is written 0600, yet the KV beside it (payproxy secrets in clear, the storefront's
  // private signing keys, the outbox's claim codes) sat in a 0755 folder any local user could read.
  const base = await Deno.makeTempDir({ prefix: "svc-data-dir-" });
  try {
    await Deno.chmod(base, 0o755);
    const config = parseConfig({
      DATA_DIR: `${base}/data/nested`,
      KV_PATH: `${base}/kv/store/kv.sqlite3`,
      DEMO_SEED: "false",
      SOURCES_POLLER: "false",
      EVENTS_FLUSHER: "false",
    });
    const deps = await openDeps(config);
    await deps[Symbol.asyncDispose]();
    for (const dir of [`${base}/data`, `${base}/data/nested`, `${base}/kv`, `${base}/kv/store`]) {
      assert.equal(((await Deno.stat(dir)).mode! & 0o777).toString(8), "700", dir);
    }
    // An existing folder is the operator's: its mode is left as it was.
    assert.equal(((await Deno.stat(base)).mode! & 0o777).toString(8), "755");
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
