/**
 * Per-day compaction: merges a day's small Parquet files into one (deduplicated by tenant and event_id) and
 * removes the originals. Crash-safe through a KV manifest at `["ev_compaction", date]`:
 *   planned  -> the merged file is being written under a `.tmp` name (inputs untouched);
 *   written  -> the merged `.tmp` is complete; inputs are being deleted, then it is renamed.
 * {@link recoverCompactions} finishes or undoes whatever a crash interrupted, so a day never holds
 * both the inputs and the merged file under `*.parquet` (no double counting).
 *
 * Readers (every process on the events folder) must not count a day while it holds only part of
 * its inputs and no merged file yet: the commit that marks a manifest `written` also lists the day
 * in the swap state (analytics/day_swaps.ts), and the commit that deletes the manifest, once the
 * merged file is renamed in, removes it; readers run a query again when a swap of one of its days
 * overlapped it. The order stays delete-then-rename: renaming first would put the inputs and the
 * merged file side by side under `*.parquet`, which every reader of the folder (another engine
 * too, which knows nothing of the swap state) would count twice; recovery could then no longer tell
 * which files to delete from the folder alone either.
 */
import type { Clock } from "../core/clock.ts";
import type { KvLease } from "../core/kv_lease.ts";
import type { AnalyticsDb } from "./duckdb.ts";
import { SWAP_STATE_KEY, swapEnded, swapStarted, type SwapState } from "./day_swaps.ts";
import { sqlString } from "./sql_util.ts";
import { uuidv7 } from "./uuid7.ts";

interface Manifest {
  date: string;
  output: string;
  inputs: string[];
  state: "planned" | "written";
}

const key = (date: string) => ["ev_compaction", date];

async function listParquet(dir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) if (e.isFile && e.name.endsWith(".parquet")) out.push(e.name);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out.sort();
}

/** The day directories (`YYYY-MM-DD`) under the events folder. */
export async function listEventDates(eventsDir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(eventsDir)) {
      const m = /^date=(\d{4}-\d{2}-\d{2})$/.exec(e.name);
      if (e.isDirectory && m) out.push(m[1]!);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out.sort();
}

const removeIfThere = async (path: string) => {
  await Deno.remove(path).catch((err) => {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  });
};

/** Test seams: steps of a compaction to stop at. */
export interface CompactionHooks {
  /** After the inputs are deleted, before the merged file is renamed in (the day is half-swapped). */
  afterInputsRemoved?: () => Promise<void>;
}

/** Attempts of one swap-state commit that lost a race with another (a recovery beside a compaction). */
const STATE_COMMIT_TRIES = 10;

/**
 * Commits `op` together with the swap state `next(current)`, checked against the state read, again
 * while another commit changes the state first.
 * @returns the commit's versionstamp; null when `op`'s own checks failed (the state was not the cause)
 */
async function commitWithState(
  kv: Deno.Kv,
  op: (atomic: Deno.AtomicOperation) => Deno.AtomicOperation,
  next: (state: SwapState | null) => SwapState,
  stillValid: () => Promise<boolean>,
): Promise<string | null> {
  for (let i = 0; i < STATE_COMMIT_TRIES; i++) {
    const state = await kv.get<SwapState>(SWAP_STATE_KEY);
    const r = await op(kv.atomic().check(state)).set(SWAP_STATE_KEY, next(state.value)).commit();
    if (r.ok) return r.versionstamp;
    if (!(await stillValid())) return null;
  }
  throw new Error("the compaction swap state kept changing");
}

/**
 * Swaps the written manifest `m` (stored at `versionstamp`) in. Ended only at that version: a
 * compactor that stalled here past its lease finds its manifest finished by the next holder, and
 * maybe the day's next compaction under the same key, which it must leave to its own recovery.
 */
async function finish(
  kv: Deno.Kv,
  dir: string,
  m: Manifest,
  versionstamp: string,
  hooks: CompactionHooks = {},
): Promise<void> {
  for (const f of m.inputs) await removeIfThere(`${dir}/${f}`);
  await hooks.afterInputsRemoved?.();
  const tmp = `${dir}/${m.output}.tmp`;
  try {
    await Deno.rename(tmp, `${dir}/${m.output}`);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  // The day leaves the swap state with its manifest: readers may trust its files again.
  await commitWithState(
    kv,
    (op) => op.check({ key: key(m.date), versionstamp }).delete(key(m.date)),
    (s) => swapEnded(s, m.date),
    async () => (await kv.get(key(m.date))).versionstamp === versionstamp,
  );
}

/**
 * Completes or rolls back compactions a crash interrupted, and clears swaps no manifest explains
 * (so readers never wait on a day nobody is swapping). Run by the flusher lease holder.
 */
export async function recoverCompactions(kv: Deno.Kv, eventsDir: string): Promise<void> {
  for await (const e of kv.list<Manifest>({ prefix: ["ev_compaction"] })) {
    const m = e.value;
    const dir = `${eventsDir}/date=${m.date}`;
    if (m.state === "written") await finish(kv, dir, m, e.versionstamp);
    else {
      // Dropped at the version read before its `.tmp` goes: a compactor stalled past its lease may
      // mark it written meanwhile, and then swaps it in (its inputs deleted) for lack of that file.
      if (!(await kv.atomic().check(e).delete(e.key).commit()).ok) continue;
      await removeIfThere(`${dir}/${m.output}.tmp`);
    }
  }
  const state = (await kv.get<SwapState>(SWAP_STATE_KEY)).value;
  for (const { date } of state?.swapping ?? []) {
    const noManifest = async () => (await kv.get(key(date))).versionstamp === null;
    const check = (op: Deno.AtomicOperation) => op.check({ key: key(date), versionstamp: null });
    if (await noManifest()) await commitWithState(kv, check, (s) => swapEnded(s, date), noManifest);
  }
}

/**
 * Merges the day's files into one when there are at least `minFiles` of them. With `lease` (the
 * flusher lease the caller holds), it is renewed for a day with enough files (listed again after)
 * and before the swap starts, and the manifest is claimed, and marked written, only at that renewal's version: a
 * compactor whose lease lapsed (a long merge of the day before) and was taken by another holder
 * swaps no day under that holder's flush, whose dedupe reads the day's files.
 * @returns the number of files merged (0 when nothing was done).
 */
export async function compactDay(
  deps: { kv: Deno.Kv; db: AnalyticsDb; clock: Clock; lease?: Pick<KvLease, "acquire" | "checkHeld"> },
  eventsDir: string,
  date: string,
  minFiles = 2,
  hooks: CompactionHooks = {},
): Promise<number> {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`bad date: ${date}`);
  const { lease } = deps;
  const held = (op: Deno.AtomicOperation) => lease ? lease.checkHeld(op) : op;
  const dir = `${eventsDir}/date=${date}`;
  const enough = (files: string[]) => files.length >= Math.max(2, minFiles);
  // A day with too few files costs a listing, not a lease renewal (a KV write for each day of every
  // tick); a day to merge is listed again after the renewal, the listing the manifest is claimed on.
  let inputs = await listParquet(dir);
  if (!enough(inputs)) return 0;
  if (lease) {
    if (!(await lease.acquire())) return 0;
    inputs = await listParquet(dir);
    if (!enough(inputs)) return 0;
  }
  const m: Manifest = { date, output: `${uuidv7(deps.clock)}.parquet`, inputs, state: "planned" };
  const claim = await held(deps.kv.atomic()).check({ key: key(date), versionstamp: null }).set(key(date), m).commit();
  // Another compaction of this day is running or needs recovery, or the lease is another's now.
  if (!claim.ok) return 0;
  try {
    const list = `[${inputs.map((f) => sqlString(`${dir}/${f}`)).join(", ")}]`;
    await deps.db.withConnection((conn) =>
      conn.run(
        `COPY (
           SELECT * FROM (
             SELECT DISTINCT ON (tenant_id, event_id) * FROM read_parquet(${list}, hive_partitioning = false, union_by_name = true)
             ORDER BY tenant_id, event_id, ts
           ) ORDER BY ts
         ) TO ${sqlString(`${dir}/${m.output}.tmp`)} (FORMAT parquet, COMPRESSION zstd)`,
      )
    );
  } catch (err) {
    await removeIfThere(`${dir}/${m.output}.tmp`);
    await deps.kv.delete(key(date));
    throw err;
  }
  // Marked written together with the day's swap start, and only while our manifest is still the
  // one stored (a lease holder that took over may have rolled it back, and removed our .tmp) and
  // the lease still ours (renewed after the merge, which may outlast it).
  const written: Manifest = { ...m, state: "written" };
  const planned = claim.versionstamp;
  const stillOurs = async () =>
    (await deps.kv.get(key(date))).versionstamp === planned && (!lease || await lease.acquire());
  const marked = (!lease || await lease.acquire()) &&
    await commitWithState(
      deps.kv,
      (op) => held(op).check({ key: key(date), versionstamp: planned }).set(key(date), written),
      (s) => swapStarted(s, date, deps.clock.now().getTime()),
      stillOurs,
    );
  if (!marked) {
    await removeIfThere(`${dir}/${m.output}.tmp`);
    return 0;
  }
  await finish(deps.kv, dir, written, marked, hooks);
  return inputs.length;
}
