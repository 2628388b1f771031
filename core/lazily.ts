/**
 * `load()` run once, on the first call, its promise shared by every caller; a failed load is tried
 * again on the next call. For heavy modules a process may never need: `lazily(() => import("x"))`.
 *
 * @example
 * const sdk = lazily(() => import("@modelcontextprotocol/sdk/server/index.js"));
 * const { Server } = await sdk();
 */
export function lazily<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    if (!loading) {
      loading = load();
      loading.catch(() => loading = undefined);
    }
    return loading;
  };
}
