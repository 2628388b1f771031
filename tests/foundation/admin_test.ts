import assert from "node:assert/strict";
import { AdminUsageError, runAdmin } from "../../cli/commands.ts";
import { bearer, createTestWorld } from "../_helpers.ts";

Deno.test("admin: tenant, key, data model, AI model, widget, campaign and prompt round trip", async () => {
  await using w = await createTestWorld();
  const tenant = await runAdmin(w.deps, ["tenant", "create", "--name", "Acme"]) as { id: string };
  const key = await runAdmin(w.deps, ["key", "create", "--tenant", tenant.id]) as { id: string; key: string };
  assert.match(key.key, /^ak_/);
  const dm = await runAdmin(w.deps, [
    "data-model",
    "create",
    "--tenant",
    tenant.id,
    "--name",
    "News",
    "--tool-name",
    "acme-news",
    "--site",
    "news.acme.example=Acme News",
    "--marketplace",
  ]) as { id: string; sites: unknown[]; marketplace: boolean };
  assert.deepEqual(dm.sites, [{ domain: "news.acme.example", name: "Acme News" }]);
  assert.equal(dm.marketplace, true);
  const am = await runAdmin(w.deps, [
    "ai-model",
    "create",
    "--tenant",
    tenant.id,
    "--name",
    "Bot",
    "--grounding",
    dm.id,
  ]) as {
    id: string;
    provider: unknown;
  };
  assert.deepEqual(am.provider, { kind: "extractive" });
  const wd = await runAdmin(w.deps, [
    "widget",
    "create",
    "--tenant",
    tenant.id,
    "--name",
    "W",
    "--ai-model",
    am.id,
    "--origin",
    "https://news.acme.example/x",
  ]) as {
    allowedOrigins: string[];
  };
  assert.deepEqual(wd.allowedOrigins, ["https://news.acme.example"]);
  const cp = await runAdmin(w.deps, [
    "campaign",
    "create",
    "--tenant",
    tenant.id,
    "--name",
    "C",
    "--creative",
    "cr_1,cr_2",
  ]) as {
    id: string;
    creativeIds: string[];
  };
  assert.deepEqual(cp.creativeIds, ["cr_1", "cr_2"]);
  await runAdmin(w.deps, ["prompt", "create", "--tenant", tenant.id, "--text", "Hi?", "--campaign", cp.id]);
  assert.equal((await runAdmin(w.deps, ["prompt", "list", "--tenant", tenant.id]) as unknown[]).length, 1);

  let res = await w.app.request("/v1/widgets", { headers: bearer(key.key) });
  assert.equal(res.status, 200);
  await runAdmin(w.deps, ["key", "revoke", "--id", key.id]);
  res = await w.app.request("/v1/widgets", { headers: bearer(key.key) });
  assert.equal(res.status, 403);
});

Deno.test("admin: usage errors name the problem", async () => {
  await using w = await createTestWorld();
  const cases: [string[], RegExp][] = [
    [["nope", "create"], /unknown admin command/],
    [["tenant", "create"], /--name is required/],
    [["tenant", "create", "--name", "x", "--bogus"], /Unknown option/],
    [["key", "create", "--tenant", "tn_missing"], /tenant not found/],
    [["key", "revoke", "--id", "key_missing"], /api key not found/],
    // Names an object literal inherits are no commands (they were a TypeError: command.run is not a function).
    [["constructor"], /unknown admin command/],
    [["toString"], /unknown admin command/],
    [["hasOwnProperty"], /unknown admin command/],
  ];
  for (const [argv, re] of cases) {
    await assert.rejects(
      runAdmin(w.deps, argv),
      (err: Error) => err instanceof AdminUsageError && re.test(err.message),
    );
  }
  const t = await runAdmin(w.deps, ["tenant", "create", "--name", "A"]) as { id: string };
  await assert.rejects(
    runAdmin(w.deps, ["data-model", "create", "--tenant", t.id, "--name", "x", "--site", "not a domain"]),
    /--site/,
  );
  await assert.rejects(
    runAdmin(w.deps, ["ai-model", "create", "--tenant", t.id, "--name", "x", "--grounding", "dm_other"]),
    /data model not found/,
  );
});

Deno.test("admin: a revoked operator key opens no operator route; listings show ids, never keys", async () => {
  // An operator key printed at the demo's first start or pasted into a ticket could not be taken
  // back: `operator-key create` was the only operator-key command.
  await using w = await createTestWorld();
  const made = await runAdmin(w.deps, ["operator-key", "create", "--name", "laptop"]) as { id: string; key: string };
  const other = await runAdmin(w.deps, ["operator-key", "create"]) as { id: string; key: string };
  const metrics = (key: string) => w.app.request("/payproxy/metrics", { headers: bearer(key) });
  assert.equal((await metrics(made.key)).status, 200);

  const listed = await runAdmin(w.deps, ["operator-key", "list"]) as Record<string, unknown>[];
  assert.deepEqual(
    listed.map((k) => [k.id, k.name, k.revokedAt]).sort(),
    [
      [made.id, "laptop", undefined],
      [other.id, "operator", undefined],
    ].sort(),
  );
  assert.ok(!JSON.stringify(listed).includes(made.key.slice(3)), "no key in a listing");

  assert.deepEqual(await runAdmin(w.deps, ["operator-key", "revoke", "--id", made.id]), { id: made.id, revoked: true });
  const refused = await metrics(made.key);
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get("www-authenticate"), 'Bearer realm="operator"');
  await refused.body?.cancel();
  assert.equal((await metrics(other.key)).status, 200, "the other key still works");
  const after = await runAdmin(w.deps, ["operator-key", "list"]) as Record<string, unknown>[];
  assert.equal(typeof after.find((k) => k.id === made.id)?.revokedAt, "string");
  // Idempotent; an unknown id is a usage error.
  assert.deepEqual(await runAdmin(w.deps, ["operator-key", "revoke", "--id", made.id]), { id: made.id, revoked: true });
  await assert.rejects(
    runAdmin(w.deps, ["operator-key", "revoke", "--id", "opk_missing"]),
    (err: Error) => err instanceof AdminUsageError && /operator key not found/.test(err.message),
  );
});

Deno.test("admin: widget create takes only http(s) origins, as the widget settings do (no widget allows Origin: null)", async () => {
  // `--origin localhost:3000` parsed as a URL of scheme `localhost:` whose origin is "null": the
  // widget then answered any sandboxed iframe or data: page, on any site, with CORS for `null`.
  await using w = await createTestWorld();
  const tenant = await runAdmin(w.deps, ["tenant", "create", "--name", "Acme"]) as { id: string };
  const dm = await runAdmin(w.deps, ["data-model", "create", "--tenant", tenant.id, "--name", "N"]) as { id: string };
  const am = await runAdmin(w.deps, [
    "ai-model",
    "create",
    "--tenant",
    tenant.id,
    "--name",
    "Bot",
    "--grounding",
    dm.id,
  ]) as { id: string };
  const create = (origin: string) =>
    runAdmin(w.deps, [
      "widget",
      "create",
      "--tenant",
      tenant.id,
      "--name",
      "W",
      "--ai-model",
      am.id,
      "--origin",
      origin,
    ]);
  for (const origin of ["localhost:3000", "javascript:alert(1)", "file:///tmp/x.html", "data:text/html,hi"]) {
    await assert.rejects(
      create(origin),
      (err: Error) => err instanceof AdminUsageError && /^--origin /.test(err.message) && !err.message.includes(origin),
      origin,
    );
  }
  assert.deepEqual(await w.deps.repos.widgets.listByTenant(tenant.id), []);
  const ok = await create("http://localhost:3000/page") as { allowedOrigins: string[] };
  assert.deepEqual(ok.allowedOrigins, ["http://localhost:3000"]);
});
