// Brings the store's schema up to date. Several workers migrate on start at the same moment, so the whole
// check-and-apply runs under a named server lock held by one connection; MySQL DDL commits on its own, so a
// migration interrupted halfway is simply run again (its statements are written to allow that).
import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import { StoreError } from '../kernel/errors.js';
import { loadMigrations, type Migration } from './migration-files.js';
import { namedLockName, takeNamedLock } from './named-lock.js';

export interface MigrateLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface MigrateOptions {
  logger?: MigrateLogger;
  /** Where the `NNN_name.sql` files are; defaults to src/store/migrations. */
  directory?: string;
  /** Seconds to wait for another process's migration. Default 60. */
  lockTimeoutSeconds?: number;
}

const SCHEMA_MIGRATIONS = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INT NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  checksum CHAR(64) NOT NULL,
  applied_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`;

interface AppliedRow extends RowDataPacket {
  version: number;
  name: string;
  checksum: string;
}

/** Applies the pending migrations in version order; returns the versions it applied (empty when up to date). */
export async function migrate(pool: Pool, options: MigrateOptions = {}): Promise<number[]> {
  const migrations = await loadMigrations(options.directory);
  const connection = await pool.getConnection();
  let lockName: string | undefined;
  try {
    const database = await currentDatabase(connection);
    lockName = migrationLockName(database);
    await acquireLock(connection, lockName, options.lockTimeoutSeconds ?? 60);
    await connection.query(SCHEMA_MIGRATIONS);
    const pending = await pendingMigrations(connection, migrations, options.logger);
    for (const migration of pending) {
      await apply(connection, migration);
      options.logger?.info({ version: migration.version, name: migration.name }, 'migration applied');
    }
    return pending.map((migration) => migration.version);
  } finally {
    await releaseLock(connection, lockName);
  }
}

export function migrationLockName(database: string): string {
  return namedLockName(database, 'migrate');
}

async function currentDatabase(connection: PoolConnection): Promise<string> {
  const [rows] = await connection.query<RowDataPacket[]>('SELECT DATABASE() AS name');
  const name: unknown = rows[0]?.['name'];
  if (typeof name !== 'string')
    throw new StoreError('migration_no_database', 'the pool has no database selected');
  return name;
}

async function acquireLock(
  connection: PoolConnection,
  lockName: string,
  timeoutSeconds: number,
): Promise<void> {
  if (!(await takeNamedLock(connection, lockName, timeoutSeconds))) {
    throw new StoreError(
      'migration_lock_timeout',
      `another process held the migration lock ${lockName} for ${timeoutSeconds}s`,
      { retryable: true },
    );
  }
}

async function releaseLock(connection: PoolConnection, lockName: string | undefined): Promise<void> {
  if (lockName === undefined) {
    connection.release();
    return;
  }
  try {
    await connection.query('SELECT RELEASE_LOCK(?)', [lockName]);
    connection.release();
  } catch {
    // A lock belongs to its session: closing the connection is the sure way to free it.
    connection.destroy();
  }
}

async function pendingMigrations(
  connection: PoolConnection,
  migrations: Migration[],
  logger: MigrateLogger | undefined,
): Promise<Migration[]> {
  const [rows] = await connection.query<AppliedRow[]>(
    'SELECT version, name, checksum FROM schema_migrations',
  );
  const applied = new Map(rows.map((row) => [Number(row.version), row]));
  const known = new Set(migrations.map((migration) => migration.version));
  for (const migration of migrations) {
    const row = applied.get(migration.version);
    if (row && row.checksum !== migration.checksum) {
      throw new StoreError(
        'migration_checksum',
        `migration ${migration.file} was changed after it was applied; add a new migration instead`,
      );
    }
  }
  for (const row of rows) {
    // A newer release already migrated this database (rolling deploy): older code keeps working with it.
    if (!known.has(Number(row.version))) {
      logger?.warn(
        { version: row.version, name: row.name },
        'database has a migration this code does not know',
      );
    }
  }
  return migrations.filter((migration) => !applied.has(migration.version));
}

async function apply(connection: PoolConnection, migration: Migration): Promise<void> {
  for (const [index, statement] of migration.statements.entries()) {
    try {
      await connection.query(statement);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new StoreError(
        'migration_failed',
        `migration ${migration.file} statement ${index + 1}/${migration.statements.length} failed: ${reason}`,
      );
    }
  }
  await connection.query('INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)', [
    migration.version,
    migration.name,
    migration.checksum,
  ]);
}
