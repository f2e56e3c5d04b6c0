// `sqlTools(...)`: the three data tools of CONTRACT §7 as a tool source a fleet configuration wires with its own
// data database and caps. The database is opened (and refused if its account can write) at worker start.
import { ConfigError } from '../kernel/errors.js';
import type { ToolSource } from '../kernel/define-fleet.js';
import { seedDemoDatabase } from '../demo/seed-demo-database.js';
import type { WorkerServices } from '../worker/worker-services.js';
import { openDataDatabase, type DataDatabase } from './data-database.js';
import { createSqlTools, type SqlToolsOptions } from './sql-tools.js';

export const SQL_TOOL_NAMES = ['sql_query', 'list_tables', 'describe_table'] as const;

export interface SqlToolSourceOptions extends SqlToolsOptions {
  /** A mysql:// URL of a read-only account, or a DataDatabase the configuration opened itself (not closed here). */
  database: string | DataDatabase;
  /** Bytes of one query's result read from the server. Default 1 MiB. */
  maxResultBytes?: number;
  /** The demo's: seed the sales database when it is missing (only for a URL). */
  seedDemoWhenMissing?: boolean;
}

export function sqlTools(options: SqlToolSourceOptions): ToolSource<WorkerServices> {
  return {
    kind: 'tool-source',
    names: SQL_TOOL_NAMES,
    async open(services) {
      const { database, maxResultBytes, seedDemoWhenMissing, ...toolOptions } = options;
      const owned = typeof database === 'string';
      const db = owned
        ? await openData(database, services, { maxResultBytes, seed: seedDemoWhenMissing ?? false })
        : database;
      return {
        tools: createSqlTools(db, toolOptions),
        close: async () => {
          if (owned) await db.close();
        },
      };
    },
  };
}

/** Opens the data database; the demo's is seeded first when missing, so a fresh machine works. */
async function openData(
  url: string,
  services: WorkerServices,
  options: { maxResultBytes: number | undefined; seed: boolean },
): Promise<DataDatabase> {
  const open = () =>
    openDataDatabase(url, options.maxResultBytes ? { maxResultBytes: options.maxResultBytes } : {});
  try {
    return await open();
  } catch (error) {
    const writable = error instanceof ConfigError && error.code === 'data_mysql_not_read_only';
    if (writable || !options.seed) throw error;
    services.logger.info('the demo sales database is missing: seeding it (DATA_MYSQL_URL is at its default)');
    await seedDemoDatabase({ adminUrl: services.env.MYSQL_URL });
    return open();
  }
}
