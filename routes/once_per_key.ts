/**
 * `build`, answered once per key for the process. Route schemas that depend only on a setting are
 * asked for again by every app the process builds (each test world builds one); building a zod
 * schema again costs CPU and gives the same document.
 *
 * @example
 * const imageQuery = oncePerKey((max: number) => z.object({ w: z.number().max(max) }));
 * imageQuery(4096) === imageQuery(4096); // true
 */
export function oncePerKey<A, V>(build: (arg: A) => V, keyOf: (arg: A) => unknown = (arg) => arg): (arg: A) => V {
  const built = new Map<unknown, V>();
  return (arg) => {
    const key = keyOf(arg);
    if (built.has(key)) return built.get(key)!;
    const value = build(arg);
    built.set(key, value);
    return value;
  };
}
