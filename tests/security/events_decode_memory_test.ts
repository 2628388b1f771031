/**
 * Left by round 6: a flood of 8 MiB batches from a widget's allowed origin still raised the
 * process's memory by about 400 MiB (docs/security.md, "memory a flood of request bodies can
 * take"), all of it decoding: each batch was decoded whole (in a JSON worker, then copied to the
 * event loop) before it was refused, whatever its shape: 42,000 events (refused for their count),
 * one event of an 8 MiB text or of 290,000 unknown fields (each charged one event, so 1,200 of them
 * a minute per address). And batches sent at once had all passed their address's check before any
 * was counted, so each was read and decoded. Measured before: +518, +300 and +450 MiB.
 *
 * Now, from the bytes, before decoding: a batch is refused at its 501st event; a widget batch is
 * charged one event per 8 KiB of body when that is more than its events, and refused when it holds
 * more JSON values than 500 events can use; and a keyless batch's address is checked again once its
 * body may be read, so those past the limit by then are refused unread.
 *
 * Measured in a child process of its own (tests/security/_events_flood_child.ts): the resident set is
 * the whole process's, and `deno test --parallel` runs other files in this one, whose allocations
 * would count. The child samples it every 2 ms while the flood is answered; the requests are built
 * before the baseline, so their bodies are not counted.
 */
import assert from "node:assert/strict";
import { analyticsWorld } from "../analytics/_fixture.ts";
import { FLOOD_SHAPES, type FloodFigures, request } from "./_events_flood_child.ts";

const MiB = 1024 * 1024;
/** The most a flood from one allowed origin may add to the resident set. */
const MEMORY_BOUND = 64 * MiB;

/** Each shape's flood, answered in one child process (one module load for the three). */
const figures = (() => {
  let run: Promise<Record<string, FloodFigures>> | undefined;
  return (): Promise<Record<string, FloodFigures>> =>
    run ??= (async () => {
      const child = new URL("./_events_flood_child.ts", import.meta.url);
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--no-check", "--allow-all", child.pathname],
        stdout: "piped",
        stderr: "inherit",
      }).output();
      assert.ok(out.success, "the flood's child process ended without error");
      const lastLine = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!;
      return JSON.parse(lastLine) as Record<string, FloodFigures>;
    })();
})();

for (const shape of FLOOD_SHAPES) {
  Deno.test(`POST /v1/events: 12 concurrent 8 MiB widget batches of ${shape} from one address add at most 64 MiB`, async () => {
    const { statuses, idle, peak, ms } = (await figures())[shape];
    // At most one or two are refused for what they hold (422, 413); the rest are 429 once the
    // address's limit is spent, most of them unread.
    assert.ok(statuses.filter((s) => s === 429).length >= 10, statuses.join(" "));
    assert.ok(statuses.every((s) => s === 422 || s === 413 || s === 429), statuses.join(" "));
    console.log(`${shape}: +${((peak - idle) / MiB).toFixed(0)} MiB, ${ms.toFixed(0)} ms`);
    assert.ok(
      peak - idle <= MEMORY_BOUND,
      `+${((peak - idle) / MiB).toFixed(0)} MiB over ${(idle / MiB).toFixed(0)} MiB`,
    );
    // Decoding each of the first shape took about 0.3 s of CPU.
    assert.ok(ms < 2000, `${ms.toFixed(0)} ms`);
  });
}

Deno.test("POST /v1/events: a widget batch costs its address its events, or one event per 8 KiB of body when that is more", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const left = async () => (await w.deps.eventLimiters.perAddress.peek("unknown")).remaining;
  const post = async (events: unknown[]) => {
    const res = await w.app.request(request(JSON.stringify({ widget_id: "wd_main", events })));
    await res.body?.cancel();
    return res.status;
  };
  const start = await left();
  // Three small events: three.
  assert.equal(
    await post([{ event_type: "widget_load" }, { event_type: "heartbeat" }, { event_type: "heartbeat" }]),
    202,
  );
  assert.equal(await left(), start - 3);
  // One event carrying 100 KB the schema drops: 13 (ceil(100 KB / 8 KiB)).
  assert.equal(await post([{ event_type: "widget_load", note: "n".repeat(100_000) }]), 202);
  assert.equal(await left(), start - 3 - 13);
});

Deno.test("POST /v1/events: a widget batch behind a UTF-8 byte-order mark is bounded before decoding like any other", async () => {
  await using world = await analyticsWorld();
  const { w } = world;
  const bom = (text: string) => new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(text)]);
  // One event of 40,000 fields: more values than a batch can use, refused unread (413).
  const fields = Object.fromEntries(Array.from({ length: 40_000 }, (_, i) => [`k${i}`, 1]));
  const wide = await w.app.request(
    request(bom(JSON.stringify({ widget_id: "wd_main", events: [{ event_type: "widget_load", ...fields }] }))),
  );
  assert.equal(wide.status, 413);
  assert.match((await wide.json()).message, /at most \d+ JSON values/);
  // 600 events: refused for their count (422), as without the mark.
  const many = await w.app.request(
    request(bom(JSON.stringify({ widget_id: "wd_main", events: Array(600).fill({ event_type: "heartbeat" }) }))),
  );
  assert.equal(many.status, 422);
  await many.body?.cancel();
  // A small batch with the mark is still accepted.
  const ok = await w.app.request(
    request(bom(JSON.stringify({ widget_id: "wd_main", events: [{ event_type: "widget_load" }] }))),
  );
  assert.equal(ok.status, 202);
  await ok.body?.cancel();
});
