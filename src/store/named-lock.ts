// MySQL's named locks (GET_LOCK): one process at a time through a start-up step that several may reach at once
// (migrations; seeding the demo's data on a fresh machine, where `--processes N` starts N workers together).
// A lock belongs to its session: closing the connection frees it too.
import { createHash } from 'node:crypto';
import type { RowDataPacket } from 'mysql2/promise';

interface Queryable {
  query<T extends RowDataPacket[]>(sql: string, values?: unknown[]): Promise<[T, unknown]>;
}

/** GET_LOCK names are limited to 64 characters; a long database name is hashed to fit. */
export function namedLockName(database: string, purpose: string): string {
  const name = `${database}.${purpose}`;
  if (name.length <= 64) return name;
  return `${createHash('sha256').update(database).digest('hex').slice(0, 48)}.${purpose}`;
}

/** Waits up to `timeoutSeconds` for the lock; false when another session held it all that time. */
export async function takeNamedLock(
  connection: Queryable,
  name: string,
  timeoutSeconds: number,
): Promise<boolean> {
  const [rows] = await connection.query<RowDataPacket[]>('SELECT GET_LOCK(?, ?) AS got', [
    name,
    timeoutSeconds,
  ]);
  return Number(rows[0]?.['got']) === 1;
}
