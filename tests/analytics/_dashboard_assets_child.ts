/**
 * Run without --allow-read: serves the dashboard page and every asset it links, proving they come
 * from the module graph (what `deno compile` embeds), not from files read at run time. Prints one
 * line per URL: `<status> <bytes> <url>`.
 */
import { createDashboardRoutes } from "../../routes/analytics/dashboard_page.ts";
import { memoryLogger } from "../../core/log.ts";

const app = createDashboardRoutes({ log: memoryLogger() });
const page = await app.request("/");
const html = await page.text();
console.log(`${page.status} ${html.length} /dashboard`);
for (const m of html.matchAll(/(?:src|href)="\/dashboard(\/assets\/[^"]+)"/g)) {
  const res = await app.request(m[1]!);
  console.log(`${res.status} ${(await res.arrayBuffer()).byteLength} ${m[1]}`);
}
