/** A SQL string literal for server-made values (file paths, validated dates); never for user input. */
export function sqlString(value: string): string {
  if (value.includes("\0")) throw new Error("NUL in SQL literal");
  return `'${value.replaceAll("'", "''")}'`;
}

/** Converts DuckDB numeric results (bigint, number, null) to a JS number. */
export function num(v: unknown): number {
  if (v === null || v === undefined) return 0;
  return typeof v === "bigint" ? Number(v) : Number(v);
}
