/**
 * The helper thread of scan_helper.ts: scans the rows it is given with the same kernel over the
 * same shared memory, then publishes the job's number in the shared `done` cell.
 */
import { parentPort } from "node:worker_threads";
import { bindSimdScan, simdModule, type SimdScan } from "./simd.ts";

type Message =
  | { done: Int32Array }
  | { id: number; memory: WebAssembly.Memory }
  | { release: number }
  | { id: number; gen: number; args: Parameters<SimdScan["scan"]> };

const kernels = new Map<number, SimdScan>();
let done: Int32Array | null = null;

parentPort!.on("message", (m: Message) => {
  if ("done" in m) {
    done = m.done;
    Atomics.store(done, 0, -1); // started: the other thread may split scans from now on
    Atomics.notify(done, 0);
  } else if ("release" in m) kernels.delete(m.release);
  else if ("memory" in m) kernels.set(m.id, bindSimdScan(simdModule(true)!, m.memory));
  else {
    kernels.get(m.id)!.scan(...m.args);
    Atomics.store(done!, 0, m.gen);
    Atomics.notify(done!, 0);
  }
});
