// A statement as a log may show it: mysql2 puts the SQL it sent on its errors (`error.sql`), with the values
// formatted in, and those values are tool results, model output and task text. The shape keeps what tells an
// operator which statement failed (keywords, tables, columns) and replaces every literal with `?`.

/** Longer statements are cut: a batched INSERT of trace rows can be megabytes. */
export const SQL_SHAPE_MAX_CHARS = 300;

// Quoted strings (with '' and \' inside), hex and bit literals, numbers not part of a name.
const LITERALS =
  /'(?:[^'\\]|\\.|'')*'?|"(?:[^"\\]|\\.|"")*"?|\b[xXbB]'[^']*'?|\b0x[0-9a-fA-F]+\b|(?<![\w$.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?\b/g;

/** `INSERT INTO t (a, b) VALUES (?, ?)` for `INSERT INTO t (a, b) VALUES ('secret', 42)`. */
export function sqlShape(sql: string): string {
  // Only the head is read: the shape of a megabyte INSERT is in its first few hundred characters.
  const head = sql.slice(0, SQL_SHAPE_MAX_CHARS * 4);
  const shape = head.replace(LITERALS, '?').replace(/\s+/g, ' ').trim();
  if (shape.length <= SQL_SHAPE_MAX_CHARS && head.length === sql.length) return shape;
  return `${shape.slice(0, SQL_SHAPE_MAX_CHARS)}… [${sql.length} chars]`;
}

/** A driver error that carries the statement it sent (mysql2's QueryError: `sql` next to `sqlState`). */
export function carriesSql(error: object): error is { sql: string } {
  const fields = error as Record<string, unknown>;
  return typeof fields['sql'] === 'string' && ('sqlState' in fields || 'sqlMessage' in fields);
}
