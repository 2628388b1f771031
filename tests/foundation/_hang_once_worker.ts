/**
 * A pool worker for tests whose first start hangs: it never says ready unless its marker file
 * (the `marker` query parameter of its URL) exists; the hanging start writes it.
 */
import { serveJobs } from "../../core/worker_pool.ts";

const marker = new URL(import.meta.url).searchParams.get("marker")!;
if (!exists(marker)) {
  Deno.writeTextFileSync(marker, "");
} else {
  serveJobs((input: { tag: string }) => input.tag, (err) => ({ message: String(err) }));
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
