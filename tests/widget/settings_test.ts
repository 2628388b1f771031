import assert from "node:assert/strict";
import { AdminUsageError, runAdmin } from "../../cli/commands.ts";
import { newId } from "../../core/ids.ts";
import type { Widget } from "../../core/store/models.ts";
import { bearer } from "../_helpers.ts";
import { widgetWorld } from "./_world.ts";

const patch = (w: Awaited<ReturnType<typeof widgetWorld>>, key: string, id: string, body: unknown) =>
  w.app.request(`/v1/widgets/${id}`, {
    method: "PATCH",
    headers: { ...bearer(key), "content-type": "application/json" },
    body: JSON.stringify(body),
  });

Deno.test("PATCH /v1/widgets/{id} changes the configuration the public config shows", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const now = w.clock.now().toISOString();
  const campaign = await w.deps.repos.campaigns.create({
    id: newId("cp", w.clock),
    tenantId: a.tenantId,
    name: "Spring",
    creativeIds: ["cr_9"],
    createdAt: now,
  });
  const res = await patch(w, a.key, a.widget.id, {
    title: "Ask the Ledger",
    placeholder: "Ask about today's news",
    mode: "docked",
    position: "bottom-left",
    theme: "light",
    colors: { accent: "#AA0000", background: "#ffffff" },
    prompts: ["What happened at city hall?", "What happened at city hall?"],
    campaign_ids: [campaign.id],
    recommendations: { enabled: true, data_model_id: a.dmTech },
    allowed_origins: ["https://dailyledger.example/some/page", "http://127.0.0.1:8001"],
    daily_answer_cap: 100,
  });
  assert.equal(res.status, 200);
  const saved = await res.json() as Widget;
  assert.equal(saved.title, "Ask the Ledger");
  assert.deepEqual(saved.colors, { accent: "#aa0000", background: "#ffffff" });
  assert.deepEqual(saved.allowedOrigins, ["https://dailyledger.example", "http://127.0.0.1:8001"]);
  assert.equal(saved.promptIds!.length, 1, "one prompt per text");
  assert.deepEqual(saved.recommendations, { enabled: true, dataModelId: a.dmTech });
  assert.equal(saved.dailyAnswerCap, 100);
  assert.deepEqual(await w.deps.repos.widgets.get(a.widget.id), saved);

  // A second change of the same text reuses the configured prompt.
  const again = await (await patch(w, a.key, a.widget.id, { prompts: ["What happened at city hall?"] })).json();
  assert.deepEqual(again.promptIds, saved.promptIds);

  const read = await w.app.request(`/v1/widgets/${a.widget.id}`, { headers: bearer(a.key) });
  assert.equal(read.status, 200);
  assert.equal((await read.json()).title, "Ask the Ledger");

  const config = await (await w.call(`/${a.widget.id}/config`, { origin: "http://127.0.0.1:8001" })).json();
  assert.equal(config.title, "Ask the Ledger");
  assert.equal(config.placeholder, "Ask about today's news");
  assert.deepEqual(config.prompts, [{ id: saved.promptIds![0], text: "What happened at city hall?" }]);
  assert.equal(config.sponsored.length, 0, "the campaign has no prompts yet");
});

Deno.test("PATCH /v1/widgets/{id} refuses another tenant's widget, prompts, campaigns and data models", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const b = await w.tenant("Beta");
  const now = w.clock.now().toISOString();
  const bPrompt = await w.deps.repos.prompts.create({
    id: newId("pm", w.clock),
    tenantId: b.tenantId,
    text: "B",
    createdAt: now,
  });
  const bCampaign = await w.deps.repos.campaigns.create({
    id: newId("cp", w.clock),
    tenantId: b.tenantId,
    name: "B",
    creativeIds: [],
    createdAt: now,
  });
  let res = await patch(w, a.key, b.widget.id, { title: "Mine now" });
  assert.equal(res.status, 404);
  assert.deepEqual(await res.json(), { message: "Widget not found" });

  const cases: [unknown, string][] = [
    [{ prompts: [bPrompt.id] }, "prompts.0: prompt not found"],
    [{ campaign_ids: [bCampaign.id] }, "campaign_ids.0: campaign not found"],
    [
      { recommendations: { enabled: true, data_model_id: b.dmNews } },
      "recommendations.data_model_id: must be one of the AI model's data models",
    ],
    [{ attribution: { show_powered_by: false } }, "attribution.show_powered_by: hiding it needs a white-label plan"],
    [{ colors: { accent: "red" } }, "colors.accent: must be a #RRGGBB colour"],
    [{ allowed_origins: ["javascript:alert(1)"] }, "allowed_origins.0: must be an http(s) origin"],
    [{ title: "" }, "title: must not be empty"],
    [{ title: "a\u0000b" }, "title: must not contain control characters"],
    [{ daily_answer_cap: -1 }, "daily_answer_cap"],
    // The unknown key is not named: it is the caller's text.
    [{ tenantId: b.tenantId }, "has a field it does not take"],
  ];
  for (const [body, message] of cases) {
    res = await patch(w, a.key, a.widget.id, body);
    assert.equal(res.status, 422, message);
    const got = (await res.json()).message as string;
    assert.ok(got.startsWith(message) || got.includes(message), `${got} / ${message}`);
  }
  // A refused change leaves nothing behind, not even the prompt texts it named.
  res = await patch(w, a.key, a.widget.id, { prompts: ["A new text"], campaign_ids: [bCampaign.id] });
  assert.equal(res.status, 422);
  assert.deepEqual(await w.deps.repos.prompts.listByTenant(a.tenantId), []);
  assert.deepEqual(await w.deps.repos.widgets.get(a.widget.id), a.widget, "nothing changed");
});

Deno.test("attribution: only a white-label tenant's widget may hide Powered by", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  await runAdmin(w.deps, ["tenant", "white-label", "--id", a.tenantId, "--on"]);
  const res = await patch(w, a.key, a.widget.id, { attribution: { show_powered_by: false } });
  assert.equal(res.status, 200);
  let config = await (await w.call(`/${a.widget.id}/config`)).json();
  assert.equal(config.attribution.show_powered_by, false);
  // The plan ends: the line is back, whatever the widget says (once the 5 s caches have passed).
  await runAdmin(w.deps, ["tenant", "white-label", "--id", a.tenantId, "--off"]);
  w.clock.advance(6_000);
  config = await (await w.call(`/${a.widget.id}/config`)).json();
  assert.equal(config.attribution.show_powered_by, true);
});

Deno.test("POST /v1/widgets creates a configured widget of the tenant's own AI model", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const b = await w.tenant("Beta");
  const post = (body: unknown) =>
    w.app.request("/v1/widgets", {
      method: "POST",
      headers: { ...bearer(a.key), "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  let res = await post({
    name: "Sidebar",
    ai_model_id: a.model.id,
    mode: "docked",
    allowed_origins: ["https://a.example"],
  });
  assert.equal(res.status, 201);
  const created = await res.json() as Widget;
  assert.match(created.id, /^wd_/);
  assert.equal(created.tenantId, a.tenantId);
  assert.equal(created.deploymentType, "embed");
  assert.equal(created.mode, "docked");
  const config = await w.call(`/${created.id}/config`, { origin: "https://a.example" });
  assert.equal(config.status, 200);

  res = await post({ name: "Theirs", ai_model_id: b.model.id });
  assert.equal(res.status, 422);
  assert.deepEqual(await res.json(), { message: "ai_model_id: AI model not found" });
});

Deno.test("admin widget configure sets the same fields through the same checks", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const out = await runAdmin(w.deps, [
    "widget",
    "configure",
    "--id",
    a.widget.id,
    "--title",
    "Ask us",
    "--mode",
    "docked",
    "--accent",
    "#123456",
    "--prompt",
    "What is new?",
    "--recommendations",
    "off",
    "--origin",
    "https://dailyledger.example",
    "--origin",
    "http://127.0.0.1:8001",
    "--daily-cap",
    "50",
  ]) as Widget;
  assert.equal(out.title, "Ask us");
  assert.equal(out.mode, "docked");
  assert.deepEqual(out.colors, { accent: "#123456" });
  assert.equal(out.promptIds!.length, 1);
  assert.deepEqual(out.recommendations, { enabled: false });
  assert.deepEqual(out.allowedOrigins, ["https://dailyledger.example", "http://127.0.0.1:8001"]);
  assert.equal(out.dailyAnswerCap, 50);
  assert.deepEqual(await runAdmin(w.deps, ["widget", "show", "--id", a.widget.id]), out);

  await assert.rejects(
    runAdmin(w.deps, ["widget", "configure", "--id", a.widget.id, "--mode", "floating"]),
    (e) => e instanceof AdminUsageError && /^mode: /.test(e.message),
  );
  await assert.rejects(
    runAdmin(w.deps, ["widget", "configure", "--id", a.widget.id, "--powered-by", "off"]),
    (e) => e instanceof AdminUsageError && /white-label/.test(e.message),
  );
  await assert.rejects(
    runAdmin(w.deps, ["widget", "configure", "--id", "wd_nope"]),
    (e) => e instanceof AdminUsageError && /widget not found/.test(e.message),
  );
});

Deno.test("admin campaign active: a paused campaign's prompts leave the widget's config", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const now = w.clock.now().toISOString();
  const campaign = await w.deps.repos.campaigns.create({
    id: newId("cp", w.clock),
    tenantId: a.tenantId,
    name: "Spring",
    creativeIds: [],
    createdAt: now,
  });
  await w.deps.repos.prompts.create({
    id: newId("pm", w.clock),
    tenantId: a.tenantId,
    campaignId: campaign.id,
    text: "Where to go?",
    createdAt: now,
  });
  await runAdmin(w.deps, ["widget", "configure", "--id", a.widget.id, "--campaign", campaign.id]);
  assert.equal((await (await w.call(`/${a.widget.id}/config`)).json()).sponsored.length, 1);
  await runAdmin(w.deps, ["campaign", "active", "--id", campaign.id, "--off"]);
  w.clock.advance(6_000);
  assert.deepEqual((await (await w.call(`/${a.widget.id}/config`)).json()).sponsored, []);
  await assert.rejects(runAdmin(w.deps, ["campaign", "active", "--id", campaign.id]), AdminUsageError);
});

Deno.test("PATCH /v1/widgets/{id}: concurrent changes of different fields all stick, and none answers 500", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  // A publisher drops a compromised origin while a colleague retitles the widget: both must hold.
  for (let round = 0; round < 10; round++) {
    const origin = `https://site${round}.example`;
    const [titled, moved, capped] = await Promise.all([
      patch(w, a.key, a.widget.id, { title: `Round ${round}` }),
      patch(w, a.key, a.widget.id, { allowed_origins: [origin] }),
      runAdmin(w.deps, ["widget", "configure", "--id", a.widget.id, "--daily-cap", String(100 + round)]),
    ]);
    assert.deepEqual([titled.status, moved.status], [200, 200], `round ${round}`);
    const saved = (await w.deps.repos.widgets.get(a.widget.id))!;
    assert.equal(saved.title, `Round ${round}`, `round ${round}: the title stuck`);
    assert.deepEqual(saved.allowedOrigins, [origin], `round ${round}: the origins stuck`);
    assert.equal(saved.dailyAnswerCap, 100 + round, `round ${round}: the cap stuck`);
    assert.equal((capped as Widget).dailyAnswerCap, 100 + round);
  }
});

Deno.test("admin widget create takes only http(s) origins, as PATCH does: a scheme-less host never becomes the null origin", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const create = (...origins: string[]) =>
    runAdmin(w.deps, [
      "widget",
      "create",
      "--tenant",
      a.tenantId,
      "--name",
      "Sidebar",
      "--ai-model",
      a.model.id,
      ...origins.flatMap((o) => ["--origin", o]),
    ]);
  // `localhost:8001` parses as a URL of scheme `localhost:`, whose origin is "null": any sandboxed
  // iframe or data: page sends `Origin: null`, so such a widget answered every page on the web.
  for (const origin of ["localhost:8001", "file:///var/www/index.html", "data:text/html,hi", "ws://news.example"]) {
    await assert.rejects(
      create("https://news.example", origin),
      (e) =>
        e instanceof AdminUsageError &&
        e.message === "--origin must be an http(s) origin such as https://news.example.com",
      origin,
    );
  }
  const before = await w.deps.repos.widgets.listByTenant(a.tenantId);
  assert.equal(before.length, 1, "no widget was made by a refused command");
  const made = await create(
    "https://News.Example/some/page",
    "http://127.0.0.1:8001",
    "https://news.example",
  ) as Widget;
  assert.deepEqual(made.allowedOrigins, ["https://news.example", "http://127.0.0.1:8001"]);
  assert.equal((await w.call(`/${made.id}/config`, { origin: "null" })).status, 403);
  assert.equal((await w.call(`/${made.id}/config`, { origin: "https://news.example" })).status, 200);
});

Deno.test("a campaign's prompt is never a suggested prompt: it shows marked Sponsored, and not at all once the campaign is paused", async () => {
  await using w = await widgetWorld();
  const a = await w.tenant("Acme");
  const now = w.clock.now().toISOString();
  const campaign = await w.deps.repos.campaigns.create({
    id: newId("cp", w.clock),
    tenantId: a.tenantId,
    name: "Spring",
    creativeIds: [],
    createdAt: now,
  });
  const sponsored = await w.deps.repos.prompts.create({
    id: newId("pm", w.clock),
    tenantId: a.tenantId,
    campaignId: campaign.id,
    text: "Where should I travel?",
    createdAt: now,
  });
  // By id, a publisher could show an advertiser's prompt as its own (no "Sponsored" mark, counted as a
  // suggested prompt), and keep showing it after the operator paused the campaign.
  const res = await patch(w, a.key, a.widget.id, { prompts: ["What is new?", sponsored.id] });
  assert.equal(res.status, 422);
  assert.deepEqual(await res.json(), { message: "prompts.1: a campaign's prompt shows only through campaign_ids" });
  await assert.rejects(
    runAdmin(w.deps, ["widget", "configure", "--id", a.widget.id, "--prompt", sponsored.id]),
    (e) =>
      e instanceof AdminUsageError && e.message === "prompts.0: a campaign's prompt shows only through campaign_ids",
  );
  // A widget that already holds one (saved before this check) does not show it as a suggestion either.
  await w.deps.repos.widgets.update({ ...a.widget, promptIds: [sponsored.id], campaignIds: [campaign.id] });
  let config = await (await w.call(`/${a.widget.id}/config`)).json();
  assert.deepEqual(config.prompts, []);
  assert.deepEqual(config.sponsored.map((p: { prompt_id: string }) => p.prompt_id), [sponsored.id]);
  await runAdmin(w.deps, ["campaign", "active", "--id", campaign.id, "--off"]);
  w.clock.advance(6_000);
  config = await (await w.call(`/${a.widget.id}/config`)).json();
  assert.deepEqual([config.prompts, config.sponsored], [[], []]);
});

Deno.test("POST /v1/widgets stops at WIDGETS_MAX_PER_TENANT, exactly, even when the creates race", async () => {
  // Widgets were unbounded: every process loads every widget's origins for the /v1/events preflight
  // (core/widget_origins.ts), so one key could fill every process's memory with made-up widgets.
  await using w = await widgetWorld({ env: { WIDGETS_MAX_PER_TENANT: "5" } });
  const a = await w.tenant("Acme");
  const b = await w.tenant("Beta");
  const post = (key: string, model: string, i: number) =>
    w.app.request("/v1/widgets", {
      method: "POST",
      headers: { ...bearer(key), "content-type": "application/json" },
      body: JSON.stringify({ name: `W${i}`, ai_model_id: model, allowed_origins: [`https://s${i}.example`] }),
    });
  // Acme holds one widget already: 4 more fit; 40 at once race for them.
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => post(a.key, a.model.id, i)));
  const statuses = answers.map((r) => r.status).sort();
  assert.deepEqual(statuses, [...Array(4).fill(201), ...Array(36).fill(409)]);
  for (const r of answers) {
    const body = await r.json();
    if (r.status === 409) {
      assert.deepEqual(body, { message: "A tenant has at most 5 widgets; change one of them instead" });
    }
  }
  assert.equal((await w.deps.repos.widgets.listByTenant(a.tenantId)).length, 5);
  // The cap is per tenant: Beta still creates.
  assert.equal((await post(b.key, b.model.id, 99)).status, 201);
});
