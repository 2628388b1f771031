import assert from "node:assert/strict";
import { Hono } from "hono";
import { pageSecurity } from "../../routes/middleware/page_security.ts";

Deno.test("pageSecurity() sends exactly the headers a page names, CSP written directive by directive", async () => {
  const app = new Hono();
  app.use(
    "*",
    pageSecurity({
      csp: { defaultSrc: ["'none'"], imgSrc: ["'self'", "data:"], frameAncestors: ["'none'"] },
      frameOptions: "DENY",
      referrerPolicy: "no-referrer",
      nosniff: true,
    }),
  );
  app.get("/", (c) => c.text("page"));
  const res = await app.request("/");
  assert.deepEqual(Object.fromEntries(res.headers), {
    "content-security-policy": "default-src 'none'; img-src 'self' data:; frame-ancestors 'none'",
    "content-type": "text/plain;charset=UTF-8",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
  });
});

Deno.test("pageSecurity() leaves out what is not named (no HSTS, COOP, CORP or Hono's other defaults)", async () => {
  const app = new Hono();
  app.use("*", pageSecurity({ csp: { defaultSrc: ["'none'"] } }));
  app.get("/", (c) => c.text("page"));
  const res = await app.request("/");
  assert.deepEqual([...res.headers.keys()].sort(), ["content-security-policy", "content-type"]);
});

Deno.test("pageSecurity() reads a CSP source given as a function after the handler ran", async () => {
  const targets = new WeakMap<object, string>();
  const app = new Hono();
  app.use("*", pageSecurity({ csp: { formAction: [(c) => targets.get(c) ?? "'self'"] }, frameOptions: "DENY" }));
  app.get("/", (c) => c.text("no form"));
  app.get("/form", (c) => {
    targets.set(c, "'self' https://client.example");
    return c.text("a form");
  });
  app.get("/fails", () => {
    throw new Error("boom");
  });
  assert.equal((await app.request("/")).headers.get("content-security-policy"), "form-action 'self'");
  assert.equal(
    (await app.request("/form")).headers.get("content-security-policy"),
    "form-action 'self' https://client.example",
  );
  const failed = await app.request("/fails");
  assert.equal(failed.status, 500);
  assert.equal(failed.headers.get("x-frame-options"), "DENY", "error pages too");
});

Deno.test("the checkout page's security headers are the ones it set by hand before hono/secure-headers", async () => {
  const { CHECKOUT_HEADERS, CHECKOUT_SECURITY } = await import("../../routes/storefront/checkout_page.ts");
  const app = new Hono();
  app.get("/", CHECKOUT_SECURITY, (c) => c.html("<p>page</p>", 200, CHECKOUT_HEADERS));
  const res = await app.request("/");
  const headers = Object.fromEntries(res.headers);
  assert.match(
    headers["content-security-policy"]!,
    /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+=*'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'$/,
  );
  delete headers["content-security-policy"];
  assert.deepEqual(headers, {
    "cache-control": "no-store",
    "content-type": "text/html; charset=UTF-8",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
  });
});
