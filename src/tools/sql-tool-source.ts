// `sqlTools(...)`: the three data tools (docs/tool-safety.md) as a tool source a fleet configuration wires with
// its own data database and caps. The database is opened (and refused if its account can write) at worker start.
import { ConfigError } from '../kernel/errors.js';
import type { ToolSource } from '../kernel/define-fleet.js';
import type { ToolServices } from './tool-services.js';
import { openDataDatabase, type DataDatabase } from './data-database.js';
import { createSqlTools, type SqlToolsOptions } from './sql-tools.js';

export const SQL_TOOL_NAMES = ['sql_query', 'list_tables', 'describe_table'] as const;

export interface SqlToolSourceOptions extends SqlToolsOptions {
  /** A mysql:// URL of a read-only account, or a DataDatabase the configuration opened itself (not closed here). */
  database: string | DataDatabase;
  /** Bytes of one query's result read from the server. Default 1 MiB. */
  maxResultBytes?: number;
  /** Called once when the database (a URL) cannot be opened for being absent, then opened again. */
  whenMissing?: () => Promise<void>;
}

export function sqlTools(options: SqlToolSourceOptions): ToolSource<ToolServices> {
  return {
    kind: 'tool-source',
    names: SQL_TOOL_NAMES,
    async open(services) {
      const { database, maxResultBytes, whenMissing, ...toolOptions } = options;
      const owned = typeof database === 'string';
      const db = owned ? await openData(database, services, { maxResultBytes, whenMissing }) : database;
      return {
        tools: createSqlTools(db, toolOptions),
        close: async () => {
          if (owned) await db.close();
        },
      };
    },
  };
}

/** Opens the data database; when it fails and `whenMissing` is given, that runs once and the open is tried again. */
async function openData(
  url: string,
  services: ToolServices,
  options: { maxResultBytes: number | undefined; whenMissing: (() => Promise<void>) | undefined },
): Promise<DataDatabase> {
  const open = () =>
    openDataDatabase(url, options.maxResultBytes ? { maxResultBytes: options.maxResultBytes } : {});
  try {
    return await open();
  } catch (error) {
    const writable = error instanceof ConfigError && error.code === 'data_mysql_not_read_only';
    if (writable || !options.whenMissing) throw error;
    services.logger.info('the data database could not be opened: preparing it, then opening it again');
    await options.whenMissing();
    return open();
  }
}
