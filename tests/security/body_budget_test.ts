/**
 * The process-wide budget of request-body bytes (routes/middleware/body_budget.ts): a body takes
 * its share before it is read and holds it until it is answered; one that does not fit waits
 * unread in a bounded queue with a deadline, and is then served as sent. On a tiny Hono app.
 */
import assert from "node:assert/strict";
import { OpenAPIHono } from "@hono/zod-openapi";
import { memoryLogger } from "../../core/log.ts";
import type { AppEnv } from "../../routes/env.ts";
import { createErrorHandler } from "../../routes/errors.ts";
import { bodyReader } from "../../routes/middleware/body.ts";
import { BodyBudget, SMALL_BODY_BYTES } from "../../routes/middleware/body_budget.ts";

const KiB = 1024;

/** An app whose `/echo` answers the length of the JSON body's `pad`, and the budget held while it ran. */
function echoApp(budget: BodyBudget, hold?: Promise<void>) {
  const app = new OpenAPIHono<AppEnv>();
  app.onError(createErrorHandler(memoryLogger(), "message"));
  app.use("/echo", bodyReader({ limit: 1024 * KiB, budget }));
  let peak = 0;
  app.post("/echo", async (c) => {
    peak = Math.max(peak, budget.held);
    await hold;
    const body = await c.req.json() as { pad: string };
    return c.json({ length: body.pad.length });
  });
  return { app, peak: () => peak };
}

/** A JSON body of about `bytes`, as a stream that records whether it was pulled. */
function watchedBody(bytes: number) {
  const text = new TextEncoder().encode(JSON.stringify({ pad: "x".repeat(bytes - 10) }));
  let pulled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled = true;
      controller.enqueue(text);
      controller.close();
    },
    // Pulled only when read, not ahead of it.
  }, { highWaterMark: 0 });
  return { stream, length: text.length, pulled: () => pulled };
}

const post = (app: OpenAPIHono<AppEnv>, body: { stream: ReadableStream<Uint8Array>; length: number }) =>
  app.request("/echo", {
    method: "POST",
    headers: { "content-type": "application/json", "content-length": String(body.length) },
    body: body.stream,
  });

/** Lets pending promise callbacks and timers of 0 ms run. */
const settle = () => new Promise((r) => setTimeout(r, 0));

Deno.test("bodyReader() with a full budget: a large body waits unread, then is served as sent once room is given back", async () => {
  const budget = new BodyBudget({ bytes: 256 * KiB, maxWaiting: 4, waitMs: 30_000 });
  const { app } = echoApp(budget);
  const giveBack = await budget.take(256 * KiB);
  const body = watchedBody(200 * KiB);
  const answer = post(app, body);
  await settle();
  assert.equal(budget.waiting, 1);
  assert.equal(body.pulled(), false, "not read while it waits");
  giveBack();
  const res = await answer;
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { length: 200 * KiB - 10 });
  assert.equal(budget.held, 0, "its share is given back once answered");
});

Deno.test("bodyReader(): 8 concurrent 200 KiB bodies under a 512 KiB budget are all served, never more than 2 held at once", async () => {
  const budget = new BodyBudget({ bytes: 512 * KiB, maxWaiting: 16, waitMs: 30_000 });
  let open!: () => void;
  const { app, peak } = echoApp(budget, new Promise<void>((r) => (open = r)));
  const answers = Array.from({ length: 8 }, () => post(app, watchedBody(200 * KiB)));
  await settle();
  assert.equal(budget.waiting, 6);
  open();
  const statuses = await Promise.all(answers.map(async (a) => {
    const res = await a;
    return [res.status, (await res.json()).length];
  }));
  assert.deepEqual(statuses, Array(8).fill([200, 200 * KiB - 10]));
  assert.ok(peak() <= 512 * KiB && peak() >= 400 * KiB, `peak ${peak()}`);
  assert.equal(budget.held, 0);
});

Deno.test("bodyReader(): a small body never waits, and a body over the whole budget runs alone", async () => {
  const budget = new BodyBudget({ bytes: 128 * KiB, maxWaiting: 4, waitMs: 30_000 });
  const { app } = echoApp(budget);
  const giveBack = await budget.take(128 * KiB);
  const small = await post(app, watchedBody(SMALL_BODY_BYTES));
  assert.equal(small.status, 200, "a small body passes a full budget");
  giveBack();
  const large = await post(app, watchedBody(600 * KiB));
  assert.equal(large.status, 200, "a body larger than the budget takes all of it");
  assert.equal(budget.held, 0);
});

Deno.test("bodyReader(): past the queue's bound or its deadline a body is refused 503 server_busy with Retry-After, unread", async () => {
  const budget = new BodyBudget({ bytes: 128 * KiB, maxWaiting: 1, waitMs: 50 });
  const { app } = echoApp(budget);
  const giveBack = await budget.take(128 * KiB);
  const first = watchedBody(100 * KiB);
  const waiting = post(app, first);
  await settle();
  const second = watchedBody(100 * KiB);
  const full = await post(app, second);
  assert.equal(full.status, 503);
  assert.equal(full.headers.get("retry-after"), "1");
  assert.deepEqual(await full.json(), { message: "Too many large request bodies at once, try again shortly" });
  assert.equal(second.pulled(), false);
  const late = await waiting;
  assert.equal(late.status, 503, "the deadline passed");
  await late.body?.cancel();
  assert.equal(first.pulled(), false);
  assert.equal(budget.waiting, 0);
  giveBack();
  assert.equal(budget.held, 0);
});

Deno.test("BodyBudget: one holder (a keyless sender's address) holds at most its part, and its queued bodies never keep another's out", async () => {
  // 1 MiB, a quarter of it (256 KiB) per holder: one address trickling large bodies cannot hold it all.
  const budget = new BodyBudget({ bytes: 1024 * KiB, maxWaiting: 8, waitMs: 30_000 });
  const order: string[] = [];
  const first = await budget.take(200 * KiB, "203.0.113.7");
  const second = budget.take(200 * KiB, "203.0.113.7").then((give) => (order.push("a2"), give));
  await settle();
  assert.equal(budget.waiting, 1, "the same address's second large body waits");
  const other = await budget.take(200 * KiB, "198.51.100.4");
  order.push("b1");
  assert.deepEqual(order, ["b1"], "another address's body is let in past it");
  first();
  (await second)();
  other();
  assert.deepEqual(order, ["b1", "a2"]);
  assert.equal(budget.held, 0);
  // A holder with nothing held may take a body larger than its part; no holder takes from the whole.
  (await budget.take(600 * KiB, "203.0.113.7"))();
  (await budget.take(600 * KiB))();
});

Deno.test("BodyBudget: one holder's waiting bodies fill at most its part of the queue; another's large body is let in while there is room", async () => {
  // A queue of 16, 2 a holder: one address sending hundreds of large bodies at once kept everyone
  // else's large bodies out (refused at once for a full queue) with most of the budget free.
  const budget = new BodyBudget({ bytes: 1024 * KiB, maxWaiting: 16, waitMs: 30_000 });
  const flooder = "203.0.113.7";
  const held = await budget.take(256 * KiB, flooder);
  const queued = [budget.take(200 * KiB, flooder), budget.take(200 * KiB, flooder)];
  await settle();
  assert.equal(budget.waiting, 2);
  const refused = await budget.take(200 * KiB, flooder).then(() => null, (e) => e);
  assert.equal(refused?.code, "server_busy", "the holder's third waiting body is refused at once");
  assert.equal(budget.waiting, 2, "it did not join the queue");
  const other = await budget.take(100 * KiB, "198.51.100.4");
  assert.equal(budget.held, 356 * KiB, "another address's body is let in");
  other();
  held();
  // Its own bodies go in one at a time, within its part.
  (await queued[0]!)();
  (await queued[1]!)();
  assert.equal(budget.held, 0);
  // Its waiting count went back down: it may queue again.
  const again = await budget.take(256 * KiB, flooder);
  const next = budget.take(200 * KiB, flooder);
  await settle();
  assert.equal(budget.waiting, 1);
  again();
  (await next)();
});
