/**
 * The fixed CPU cost of a test world (tests/_helpers.ts `createTestWorld()`): WORLDS worlds in a
 * row, each answering one `/healthz` and closing, after a few to warm up. Prints the CPU
 * milliseconds (user + system of this process) per world. `PROFILE=<file>` also writes a V8 CPU
 * profile of the loop and prints the functions with the most self time.
 *
 *   deno run -A bench/world_cost.ts   (WORLDS=60 PROFILE=/tmp/world.cpuprofile)
 */
import process from "node:process";
import { createTestWorld } from "../tests/_helpers.ts";

const worlds = Number(Deno.env.get("WORLDS") ?? 60);
const profilePath = Deno.env.get("PROFILE");

async function oneWorld(): Promise<void> {
  await using w = await createTestWorld();
  const res = await w.app.request("/healthz");
  await res.body?.cancel();
  if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
}

/** User + system CPU milliseconds of this process so far. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

for (let i = 0; i < 3; i++) await oneWorld();

const inspector = profilePath ? await import("node:inspector/promises") : undefined;
const session = inspector ? new inspector.Session() : undefined;
if (session) {
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
}
const before = cpuMs();
for (let i = 0; i < worlds; i++) await oneWorld();
const perWorld = (cpuMs() - before) / worlds;
console.log(`${worlds} worlds: ${perWorld.toFixed(2)} ms CPU per world`);

if (session && profilePath) {
  const { profile } = await session.post("Profiler.stop");
  await Deno.writeTextFile(profilePath, JSON.stringify(profile));
  const self = new Map<string, number>();
  const dt = new Map<number, number>();
  profile.samples?.forEach((id, i) => dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas?.[i] ?? 0)));
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + (dt.get(node.id) ?? 0));
  }
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 40);
  for (const [key, us] of top) console.log(`${(us / 1000 / worlds).toFixed(3)} ms/world  ${key}`);
}
