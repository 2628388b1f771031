/**
 * Day swaps: the stretch of a compaction (analytics/compaction.ts) during which a day folder holds
 * neither all its inputs nor the merged file, and the guard that keeps readers in every process
 * sharing the KV and the events folder from reporting a figure computed over such a folder.
 *
 * One KV key, `["ev_compaction_state"]`, says which days are being swapped. Compaction adds a day
 * in the same atomic commit that marks its manifest `written` (before any input is deleted) and
 * removes it in the commit that deletes the manifest (after the merged file is renamed in); each
 * change bumps `gen` and is listed in `recent`. So a day's files change under compaction only while
 * the key lists that day, and between two reads of the key a swap started or ended exactly when a
 * `recent` entry newer than the first read names the day. A query run wholly between a read that
 * shows no swap of its days and a later read that shows none started or ended since saw each of its
 * days either with every input (before the swap) or with the merged file alone (after), the same
 * events either way: its figure is right. The guard runs the query again otherwise.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Clock } from "../core/clock.ts";
import { analyticsErrors } from "./errors.ts";
import { formatDay, parseDay } from "./filters.ts";

/** The KV key of the swap state (outside the `["ev_compaction", date]` manifests' prefix). */
export const SWAP_STATE_KEY: Deno.KvKey = ["ev_compaction_state"];

/** The swap state as stored. */
export interface SwapState {
  /** Bumped by every change. */
  gen: number;
  /** Days whose files are being swapped, with when the swap started (ms, by the compactor's clock). */
  swapping: { date: string; since: number }[];
  /** The latest changes (a swap started or ended), oldest first, at most {@link RECENT_KEPT}. */
  recent: { date: string; gen: number }[];
}

/** Changes kept in `recent`: a reader that missed more during one query runs it again. */
const RECENT_KEPT = 64;

const EMPTY: SwapState = { gen: 0, swapping: [], recent: [] };

const stateOf = (value: SwapState | null): SwapState => value ?? EMPTY;

function changed(state: SwapState | null, date: string, swapping: SwapState["swapping"]): SwapState {
  const s = stateOf(state);
  const gen = s.gen + 1;
  return { gen, swapping, recent: [...s.recent, { date, gen }].slice(-RECENT_KEPT) };
}

/** The state once a swap of `date` started at `since`. */
export function swapStarted(state: SwapState | null, date: string, since: number): SwapState {
  const others = stateOf(state).swapping.filter((s) => s.date !== date);
  return changed(state, date, [...others, { date, since }]);
}

/** The state once the swap of `date` ended (or was found abandoned and repaired). */
export function swapEnded(state: SwapState | null, date: string): SwapState {
  return changed(state, date, stateOf(state).swapping.filter((s) => s.date !== date));
}

/** Which UTC days (`YYYY-MM-DD`) a query reads. */
export type DayScope = (day: string) => boolean;

const DATE_FOLDER = /\/date=(\d{4}-\d{2}-\d{2})\//;

/**
 * The days a rollup's parameters make it read: `from_date`..`to_date` and the day before (a
 * sponsored daily rollup reads the evening before its window), and the day folder of every file a
 * list parameter names (`files`, `derived_files`). Every day when it names neither.
 */
export function daysRead(params: Record<string, unknown>): DayScope {
  const named = new Set<string>();
  for (const v of Object.values(params)) {
    if (!Array.isArray(v)) continue;
    for (const s of v) {
      const m = typeof s === "string" ? DATE_FOLDER.exec(s) : null;
      if (m) named.add(m[1]!);
    }
  }
  const from = typeof params.from_date === "string" ? parseDay(params.from_date) : null;
  const to = typeof params.to_date === "string" ? parseDay(params.to_date) : null;
  if (from !== null && to !== null) {
    const first = formatDay(from - 86_400_000), last = formatDay(to);
    return (day) => (day >= first && day <= last) || named.has(day);
  }
  if (named.size) return (day) => named.has(day);
  return () => true;
}

/** What DuckDB says when a file its glob listed is gone by the time it opens it. */
const MISSING_FILE = /No such file|Cannot open file|could not open file/i;

/** Tuning of {@link DaySwapGuard}. */
export interface DaySwapGuardOptions {
  /** Runs of one query before it answers 503 (default 3). */
  tries?: number;
  /** How long one query waits in all for swaps of its days to end (default 2 s). */
  waitMs?: number;
  /** Pause between reads of the state while waiting (default 20 ms). */
  pollMs?: number;
  /**
   * A swap older than this was left by a process that died mid-swap: no use waiting, the next
   * flusher lease holder repairs it (default 60 s, four default lease periods).
   */
  abandonedAfterMs?: number;
}

/** The days an outer run covers: its own and those of the runs nested in it, while it lasts. */
interface OuterRun {
  scopes: DayScope[];
  open: boolean;
}

/**
 * Runs analytics queries so that none reports a figure computed over a half-swapped day folder or
 * fails because compaction deleted a file it had listed (see the module comment). Cost per query: two KV reads of one small key (about 50 µs).
 * A run inside another (a query of a listing the outer run guards) adds its days to the outer
 * run's and runs once: the outer run's two reads cover it.
 */
export class DaySwapGuard {
  readonly #outer = new AsyncLocalStorage<OuterRun>();
  readonly #tries: number;
  readonly #waitMs: number;
  readonly #pollMs: number;
  readonly #abandonedAfterMs: number;

  constructor(private readonly deps: { kv: Deno.Kv; clock: Clock }, options: DaySwapGuardOptions = {}) {
    this.#tries = options.tries ?? 3;
    this.#waitMs = options.waitMs ?? 2000;
    this.#pollMs = options.pollMs ?? 20;
    this.#abandonedAfterMs = options.abandonedAfterMs ?? 60_000;
  }

  /**
   * Runs `work` (a query over the days `days` selects) until a run is known to have seen no swap
   * of those days.
   * @throws AppError `events_reorganising` (503) when that did not happen within the tries or the
   *   wait; whatever else `work` throws
   */
  async run<T>(days: DayScope, work: () => Promise<T>): Promise<T> {
    const outer = this.#outer.getStore();
    if (outer?.open) {
      // The outer run reads the state after its work, this run's included: it checks these days too.
      outer.scopes.push(days);
      return await work();
    }
    const run: OuterRun = { scopes: [days], open: true };
    // The days of every run so far: nested runs found in one attempt are waited for in the next.
    const read: DayScope = (day) => run.scopes.some((scope) => scope(day));
    const waitUntil = performance.now() + this.#waitMs;
    try {
      for (let attempt = 0; attempt < this.#tries; attempt++) {
        const before = await this.#settled(read, waitUntil);
        if (!before) break;
        let result: T;
        try {
          result = await this.#outer.run(run, work);
        } catch (err) {
          // A file gone under the run: compaction's doing only when a swap of its days happened meanwhile.
          if (!MISSING_FILE.test(String((err as Error)?.message)) || !(await this.#touched(before, read))) throw err;
          continue;
        }
        if (!(await this.#touched(before, read))) return result;
      }
    } finally {
      // Work it left running (a stream read later) guards itself from now on.
      run.open = false;
    }
    throw analyticsErrors.events_reorganising({ headers: { "retry-after": "1" } });
  }

  async #read(): Promise<Deno.KvEntryMaybe<SwapState>> {
    return await this.deps.kv.get<SwapState>(SWAP_STATE_KEY);
  }

  /** The state once no swap of `days` is under way; null when one still is at `waitUntil` or was abandoned. */
  async #settled(days: DayScope, waitUntil: number): Promise<Deno.KvEntryMaybe<SwapState> | null> {
    for (;;) {
      const entry = await this.#read();
      const busy = stateOf(entry.value).swapping.filter((s) => days(s.date));
      if (!busy.length) return entry;
      const abandoned = busy.some((s) => this.deps.clock.now().getTime() - s.since >= this.#abandonedAfterMs);
      if (abandoned || performance.now() >= waitUntil) return null;
      await new Promise((r) => setTimeout(r, this.#pollMs));
    }
  }

  /** Whether a swap of `days` was under way, started or ended since `before` was read. */
  async #touched(before: Deno.KvEntryMaybe<SwapState>, days: DayScope): Promise<boolean> {
    const after = await this.#read();
    const now = stateOf(after.value);
    // Before the version shortcut: a nested run's days are known only now, and a swap of one may have
    // been under way since before the outer run read the state (unchanged since, yet the day half-swapped).
    if (now.swapping.some((s) => days(s.date))) return true;
    if (after.versionstamp === before.versionstamp) return false;
    const was = stateOf(before.value).gen;
    if (now.gen < was) return true; // the key was reset: nothing is known
    // More changes than `recent` keeps: which days they touched is not known.
    if (now.gen > was && (now.recent[0]?.gen ?? Infinity) > was + 1) return true;
    return now.recent.some((r) => r.gen > was && days(r.date));
  }
}
