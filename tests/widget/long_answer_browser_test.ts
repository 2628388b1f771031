/**
 * A long answer from the widget's AI model (a model that writes at length, or an article whose text
 * asks it to) in headless Chromium: the widget keeps it as the conversation's history for the next
 * question, which the ask route takes only up to its per-turn limit.
 */
import assert from "node:assert/strict";
import { sseReply, startChatServer } from "../answer/_chat_server.ts";
import { answerTo, openSharedBrowser, widgetWorld } from "./_browser_world.ts";

const W = "ask-ai-widget";
const inWidget = (sel: string) => `${W} >>> ${sel}`;

Deno.test({
  name: "widget in Chromium: after an answer longer than a history turn, the reader's next question is still answered",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // 2,600 characters, with an astral character where a cut at 2,000 would split it.
    const long = `${"The harbour port strike goes on. ".repeat(60).slice(0, 1999)}\u{1F6A2}${"x".repeat(599)}`;
    await using chat = startChatServer([
      sseReply([long.slice(0, 1300), long.slice(1300)]),
      sseReply(["Talks resume on Monday."]),
    ]);
    await using world = await widgetWorld({ env: { OPENAI_BASE_URL: chat.baseUrl, OPENAI_API_KEY: "sk-widget" } });
    const widget = (await world.w.deps.repos.widgets.get(world.widgetId))!;
    const model = (await world.w.deps.repos.aiModels.get(widget.aiModelId))!;
    await world.w.deps.repos.aiModels.update({ ...model, provider: { kind: "openai", model: "gpt-test" } });
    await using b = await openSharedBrowser("widget long answer");
    const page = b.page;
    await page.goto(world.siteUrl, { waitUntil: "load" });
    await page.waitForSelector(`${W}[data-state=ready]`);
    for (const question of ["What is happening with the harbour port strike?", "When do talks resume?"]) {
      await answerTo(page, async () => {
        await page.type(inWidget("#ask-q"), question);
        await page.keyboard.press("Enter");
      });
    }
    await b.shot("second answer");
    const error = await page.$eval(inWidget(".status"), (e) => e.hasAttribute("data-error") ? e.textContent : "");
    assert.equal(error, "", "the follow-up is answered");
    assert.equal(await page.$$eval(inWidget(".turn"), (t) => t.length), 2);
    const asks = world.seen.filter((s) => s.method === "POST" && s.path.endsWith("/ask")).map((s) => s.status);
    assert.deepEqual(asks, [200, 200]);
  },
});
