// What the SQL guard decides about a query, in a module of its own: the guard returns it and its cache keeps it.

/** `sql`: the text to run (the query without an accepted trailing comment). */
export type SqlGuardVerdict = { ok: true; tables: string[]; sql: string } | { ok: false; reason: string };
