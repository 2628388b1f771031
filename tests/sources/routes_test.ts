import assert from "node:assert/strict";
import { runAdmin } from "../../cli/commands.ts";
import { bearer } from "../_helpers.ts";
import { feedServer, LONG, rss, xml } from "./_feed_server.ts";
import { sourcesWorld } from "./_world.ts";

Deno.test("sources routes: register, list with status, read one, delete", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route("/feed.json", () =>
    Response.json({
      version: "https://jsonfeed.org/version/1.1",
      title: "Beta Times",
      items: [{ id: "1", url: feed.url("/j/1"), title: "Rail strike ends", content_text: LONG("rail") }],
    }, { headers: { "content-type": "application/feed+json" } }));
  const added = await w.addSource({ type: "jsonfeed", url: feed.url("/feed.json"), interval_s: 120 });
  assert.equal(added.status, 201);
  assert.match(added.json.id, /^src_/);
  assert.deepEqual(
    { ...added.json, id: undefined, created_at: undefined },
    {
      id: undefined,
      created_at: undefined,
      data_model_id: w.dm.id,
      type: "jsonfeed",
      url: feed.url("/feed.json"),
      interval_s: 120,
      fetch_pages: false,
      last_polled_at: null,
      last_ok_at: null,
      last_status: null,
      last_error: null,
      next_poll_at: w.clock.now().toISOString(),
      items_added: 0,
      items_updated: 0,
      consecutive_failures: 0,
      etag: null,
      last_modified: null,
    },
  );
  await w.poller().tick();
  const one = await (await w.api(`/sources/${added.json.id}`)).json();
  assert.equal(one.items_added, 1);
  assert.equal(one.last_status, "ok");
  const del = await w.api(`/sources/${added.json.id}`, { method: "DELETE" });
  assert.equal(del.status, 204);
  assert.equal((await w.api(`/sources/${added.json.id}`, { method: "DELETE" })).status, 404);
  assert.deepEqual((await (await w.api("/sources")).json()).data, []);
  // The articles it brought stay.
  assert.equal(await w.deps.search.count(w.dm.id), 1);
});

Deno.test("sources routes: bad input gets a clear 4xx", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld({ SOURCES_MAX_PER_DATA_MODEL: "2" });
  for (const i of [1, 2, 3]) {
    feed.route(`/f${i}.xml`, () => xml(rss([{ link: feed.url(`/a/${i}`), title: "T", content: LONG("t") }])));
  }
  const cases: [Record<string, unknown>, string][] = [
    [{ type: "podcast", url: feed.url("/f1.xml") }, "type: must be one of rss, atom, jsonfeed, sitemap"],
    [{ type: "rss", url: feed.url("/f1.xml"), interval_s: 59 }, "interval_s: must be at least 60 seconds"],
    [{ type: "rss", url: feed.url("/f1.xml"), interval_s: 90.5 }, "interval_s: must be a whole number of seconds"],
    [{ type: "rss" }, "url is required"],
    [{ type: "rss", url: "not a url" }, "url must be an absolute http or https URL"],
  ];
  for (const [body, message] of cases) {
    const r = await w.addSource(body);
    assert.equal(r.status, 422, JSON.stringify(body));
    assert.equal(r.json.message, message);
  }
  assert.equal((await w.addSource({ type: "rss", url: feed.url("/f1.xml") })).status, 201);
  const dup = await w.addSource({ type: "rss", url: feed.url("/f1.xml") });
  assert.equal(dup.status, 409);
  assert.equal(dup.json.message, "url is already a source of this data model");
  assert.equal((await w.addSource({ type: "rss", url: feed.url("/f2.xml") })).status, 201);
  const capped = await w.addSource({ type: "rss", url: feed.url("/f3.xml") });
  assert.equal(capped.status, 409);
  assert.equal(capped.json.message, "a data model has at most 2 sources; delete one first");
  // Both refusals come before the probe: a tenant at its cap cannot make the service fetch for it.
  assert.deepEqual([feed.hits("/f1.xml"), feed.hits("/f2.xml"), feed.hits("/f3.xml")], [1, 1, 0]);

  // Another tenant's data model and a missing key.
  const other = await w.tenantWithKey("Other");
  const res = await w.app.request(`/v1/data-models/${w.dm.id}/sources`, { headers: bearer(other.key) });
  assert.equal(res.status, 404);
  assert.equal((await w.app.request(`/v1/data-models/${w.dm.id}/sources`)).status, 401);
  const wrongType = await w.app.request(`/v1/data-models/${w.dm.id}/sources`, {
    method: "POST",
    headers: { ...bearer(w.key), "content-type": "text/plain" },
    body: "{}",
  });
  assert.equal(wrongType.status, 415);
});

Deno.test("admin: source add, list, remove and data-model retention", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld();
  feed.route("/feed.xml", () => xml(rss([{ link: feed.url("/a/1"), title: "T", content: LONG("t") }])));
  const added = await runAdmin(w.deps, [
    "source",
    "add",
    "--data-model",
    w.dm.id,
    "--type",
    "atom",
    "--url",
    feed.url("/feed.xml"),
    "--interval",
    "600",
  ]) as { id: string };
  assert.match(added.id, /^src_/);
  const listed = await runAdmin(w.deps, ["source", "list", "--data-model", w.dm.id]) as { id: string }[];
  assert.equal(listed.length, 1);
  await assert.rejects(
    runAdmin(w.deps, [
      "source",
      "add",
      "--data-model",
      w.dm.id,
      "--type",
      "rss",
      "--url",
      feed.url("/x"),
      "--interval",
      "5",
    ]),
    /--interval must be at least 60 seconds/,
  );
  assert.deepEqual(await runAdmin(w.deps, ["source", "remove", "--data-model", w.dm.id, "--id", added.id]), {
    id: added.id,
    removed: true,
  });
  await assert.rejects(
    runAdmin(w.deps, ["source", "remove", "--data-model", w.dm.id, "--id", added.id]),
    /source not found/,
  );
  assert.deepEqual(
    await runAdmin(w.deps, ["data-model", "retention", "--data-model", w.dm.id, "--max-age-days", "30"]),
    { dataModelId: w.dm.id, max_age_days: 30 },
  );
  assert.equal((await (await w.api("/retention")).json()).max_age_days, 30);
});

Deno.test("POST sources is limited per API key: failed probes cannot make the service fetch without end", async () => {
  await using feed = feedServer();
  await using w = await sourcesWorld({ SOURCE_CHECKS_PER_MIN: "5" });
  // A page that is not a feed: every registration probes it, fails (422) and stores nothing, so the
  // per-model cap never applies; each was one outbound fetch of up to SOURCE_MAX_BYTES.
  feed.route("/big", () => new Response("<html><body>" + "x".repeat(64 * 1024) + "</body></html>"));
  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) {
    const res = await w.api("/sources", {
      method: "POST",
      body: { type: "rss", url: feed.url(`/big?n=${i}`), interval_s: 300 },
    });
    statuses.push(res.status);
    if (res.status === 429) {
      assert.deepEqual(await res.json(), { message: "rate limit exceeded" });
      assert.equal(res.headers.get("retry-after"), "60");
    } else await res.body?.cancel();
  }
  assert.deepEqual(statuses, [422, 422, 422, 422, 422, 429, 429, 429, 429, 429, 429, 429]);
  assert.equal(feed.hits("/big"), 5, "one outbound fetch per allowed registration, none after");
  // Reading the sources is not registering: it stays open.
  assert.equal((await w.api("/sources")).status, 200);
  // The next minute registers again.
  w.clock.advance(60_000);
  feed.route("/feed.xml", () => xml(rss([{ link: feed.url("/a/1"), title: "T", content: LONG("t") }])));
  assert.equal((await w.addSource({ type: "rss", url: feed.url("/feed.xml") })).status, 201);
});
