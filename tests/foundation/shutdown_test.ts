import assert from "node:assert/strict";
import { startServer } from "../../routes/server.ts";

Deno.test("startServer().shutdown() lets a request in flight complete", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const inFlight = new Promise<void>((r) => (started = r));
  const server = startServer(async () => {
    started();
    await gate;
    return new Response("finished");
  });
  const pending = fetch(server.url + "/slow");
  await inFlight;
  const stopping = server.shutdown(5_000);
  let stopped = false;
  void stopping.then(() => (stopped = true));
  await Promise.resolve();
  assert.equal(stopped, false, "shutdown waits for the request");
  release();
  const res = await pending;
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "finished");
  await stopping;
  await server.finished;
  await assert.rejects(fetch(server.url + "/after"));
});
