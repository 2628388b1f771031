import assert from "node:assert/strict";
import { createTestWorld } from "../_helpers.ts";
import { openBrowser, serveLocal } from "../_browser.ts";
import { pageFaults } from "../_axe.ts";

Deno.test("GET / in Chromium: fits 360 and 1280 px, every link reachable by keyboard, 0 axe faults", async () => {
  await using w = await createTestWorld();
  await using server = serveLocal();
  server.setHandler(w.app.fetch);
  await using session = await openBrowser("front-page");
  const { page } = session;
  const problems: string[] = [];
  page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
  for (const width of [360, 1280]) {
    await page.setViewport({ width, height: 800 });
    await page.goto(`${server.url}/`, { waitUntil: "load" });
    console.log(`screenshot: ${await session.shot(`front page ${width}`)}`);
    const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(scrollWidth <= width, `${scrollWidth} px wide at ${width}`);
    assert.deepEqual(await pageFaults(page), [], `${width} px`);
  }
  // Tab walks every link in order, each showing a focus outline.
  const links = await page.$$eval("main a", (as) => as.map((a) => a.getAttribute("href")));
  const reached: string[] = [];
  for (let i = 0; i < links.length; i++) {
    await page.keyboard.press("Tab");
    reached.push(
      await page.evaluate(() => document.activeElement?.getAttribute("href") ?? ""),
    );
  }
  assert.deepEqual(reached, links);
  assert.deepEqual(problems, []);
});
