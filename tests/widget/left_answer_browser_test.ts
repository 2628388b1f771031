/**
 * A reader in headless Chromium who leaves the page while the widget's answer is still coming is one
 * question in the analytics, recorded by the service (the widget never got `done`, so it sends no
 * `query`). A reader who reads to the end is the widget's alone: tests/widget/truth_browser_test.ts.
 */
import assert from "node:assert/strict";
import type { EventInput } from "../../core/events.ts";
import { heldSseReply, startChatServer } from "../answer/_chat_server.ts";
import { openSharedBrowser, widgetWorld } from "./_browser_world.ts";

const W = "ask-ai-widget";
const inWidget = (sel: string) => `${W} >>> ${sel}`;
/** A provider stream that sends its first piece, then the rest once released. */
const heldStream = () => heldSseReply(["The port strike "], ["goes on."]);

Deno.test({
  name: "widget in Chromium: a reader who leaves the page mid-answer is one question, recorded by the service",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const held = heldStream();
    await using chat = startChatServer([held.reply]);
    await using world = await widgetWorld({ env: { OPENAI_BASE_URL: chat.baseUrl, OPENAI_API_KEY: "sk-widget" } });
    const widget = (await world.w.deps.repos.widgets.get(world.widgetId))!;
    const model = (await world.w.deps.repos.aiModels.get(widget.aiModelId))!;
    await world.w.deps.repos.aiModels.update({ ...model, provider: { kind: "openai", model: "gpt-test" } });
    // The query events the service records itself.
    const served: EventInput[] = [];
    const record = world.w.deps.events.record.bind(world.w.deps.events);
    world.w.deps.events.record = async (events) => {
      served.push(...events.filter((e) => e.event_type === "query"));
      return await record(events);
    };
    await using b = await openSharedBrowser("widget left answer");
    const page = b.page;
    const widgetQueries = () => world.events.filter((e) => e.event_type === "query").length;

    await page.goto(world.siteUrl, { waitUntil: "load" });
    await page.waitForSelector(`${W}[data-state=ready]`);
    // In one input event, as a paste (the widget reads the field on submit; per key was a frame each).
    await page.focus(inWidget("#ask-q"));
    await page.keyboard.sendCharacter("What is happening with the port strike?");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() =>
      /port strike/.test(
        document.querySelector("ask-ai-widget")?.shadowRoot?.querySelector(".turn .a")?.textContent ?? "",
      )
    );
    await page.goto("about:blank");
    held.release();
    await world.until("the service's query event of the answer left", () => served.length === 1, 5_000);
    assert.equal(served[0]!.prompt, "What is happening with the port strike?");
    // As far as the answer went when the service saw the reader go (the provider may have finished it).
    assert.match(served[0]!.response ?? "", /^The port strike /);
    assert.equal(served[0]!.session_id !== undefined, true, "in the reader's session");

    assert.equal(widgetQueries(), 0, "the widget never got `done`: it sends no query");

    await world.w.deps.events.flush();
    const figures = await world.analytics("ask-ai");
    assert.equal((figures.summary as Record<string, number>).engagement_queries, 1);
    assert.equal((figures.summary as Record<string, number>).sessions, 1);
  },
});

Deno.test({
  name:
    "widget in Chromium: its query event names the answer's request_id, so the service's record of it is the same event",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using world = await widgetWorld();
    await using b = await openSharedBrowser("widget answer event id");
    const page = b.page;
    await page.goto(world.siteUrl, { waitUntil: "load" });
    await page.waitForSelector(`${W}[data-state=ready]`);
    // In one input event, as a paste (the widget reads the field on submit; per key was a frame each).
    await page.focus(inWidget("#ask-q"));
    await page.keyboard.sendCharacter("What is happening with the port strike?");
    await page.keyboard.press("Enter");
    await page.waitForSelector(`${W}:not([data-busy])`);
    await page.evaluate(() => dispatchEvent(new Event("pagehide")));
    await world.until("the widget's query event", () => world.events.some((e) => e.event_type === "query"), 5_000);
    const sent = world.events.find((e) => e.event_type === "query")!;
    assert.equal(typeof sent.request_id, "string", "the request_id of the answer's `done`");
    // The service's own record of that question (its reader's leaving reached it after `done`).
    const id = await world.w.deps.clientKeys.answerEventId(
      world.widgetId,
      String(sent.session_id),
      String(sent.request_id),
    );
    await world.w.deps.events.record([{
      event_id: id,
      event_type: "query",
      widget_id: world.widgetId,
      session_id: String(sent.session_id),
      interaction_type: "free_form",
      prompt: String(sent.prompt),
      response: String(sent.response),
    }]);
    await world.w.deps.events.flush();
    const figures = await world.analytics("ask-ai");
    assert.equal((figures.summary as Record<string, number>).engagement_queries, 1);
  },
});
