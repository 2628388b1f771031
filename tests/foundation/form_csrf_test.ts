/** FormCsrf (routes/middleware/form_csrf.ts) on a tiny Hono app: the double-submit token and the Origin check. */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { FormCsrf } from "../../routes/middleware/form_csrf.ts";

/** A page at `/form` that issues the token and a POST that answers whether the check passed. */
function formApp(secure: boolean, trustedOrigins?: string[]) {
  const csrf = new FormCsrf({ cookie: "t_csrf", path: "/", secure, trustedOrigins });
  const app = new Hono();
  app.get("/form", (c) => c.text(csrf.issue(c)));
  app.post("/form", async (c) => {
    const field = new URLSearchParams(await c.req.text()).get("csrf");
    return c.text(csrf.check(c, field) ? "ok" : "refused", csrf.check(c, field) ? 200 : 403);
  });
  return app;
}

/** Opens the form over `scheme` on host store.test and submits it with `origin` (none when null). */
async function submit(app: Hono, scheme: string, origin: string | null): Promise<number> {
  const page = await app.request(`${scheme}://store.test/form`);
  const token = await page.text();
  const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const res = await app.request(`${scheme}://store.test/form`, {
    method: "POST",
    headers: {
      host: "store.test",
      cookie,
      "content-type": "application/x-www-form-urlencoded",
      ...(origin === null ? {} : { origin }),
    },
    body: new URLSearchParams({ csrf: token }).toString(),
  });
  await res.body?.cancel();
  return res.status;
}

Deno.test("FormCsrf.check() on an https deployment refuses a form posted from http:// on our own host", async (t) => {
  // Behind a TLS terminator the request URL is http:// while the browser's Origin is https://.
  await t.step("with trusted origins (the claim and consent pages)", async () => {
    const app = formApp(true, ["https://store.test"]);
    assert.equal(await submit(app, "http", "https://store.test"), 200);
    assert.equal(await submit(app, "http", "http://store.test"), 403);
  });
  await t.step("with no trusted origins (the checkout page, one per seller host)", async () => {
    const app = formApp(true);
    assert.equal(await submit(app, "http", "https://store.test"), 200);
    assert.equal(await submit(app, "http", "http://store.test"), 403);
  });
});

Deno.test("FormCsrf.check() on a plain-http deployment (local demo) still takes its own http Origin", async () => {
  const app = formApp(false);
  assert.equal(await submit(app, "http", "http://store.test"), 200);
  assert.equal(await submit(app, "http", null), 200);
  assert.equal(await submit(app, "http", "null"), 403);
  assert.equal(await submit(app, "http", "http://evil.test"), 403);
});
