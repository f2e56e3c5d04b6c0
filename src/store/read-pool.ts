// Which store serves the reads that may lag behind the fleet's writes: the run console, reports, forecasts, the
// batch and task reads of the HTTP API once Redis no longer has them, and `npm run trace`. With MYSQL_READ_URL set
// (a replica of MYSQL_URL's database), they read there; unset, from MYSQL_URL, as every other reader does.
// Everything a run needs to see its own writes (the worker, the effect ledger, approvals, notes recall, the store
// sweeper) never comes here: it stays on MYSQL_URL. The one place that decides (docs/store.md#replicas).
import type { Pool } from 'mysql2/promise';
import { isConnectionFailure } from './mysql-errors.js';
import { parseMysqlUrl, type MysqlTarget } from './mysql-url.js';
import { connectError, createStorePool, type StorePoolOptions } from './pool.js';

/** The variables that say where reads go: the environment (config/env.ts) fits. */
export interface ReadStoreConfig {
  MYSQL_URL: string;
  MYSQL_READ_URL?: string | undefined;
}

export interface ReadStore {
  url: string;
  /** The variable the URL came from, for messages. */
  variable: 'MYSQL_URL' | 'MYSQL_READ_URL';
  /** True when reads go to MYSQL_READ_URL, apart from the fleet's writes. */
  replica: boolean;
}

/** A plain URL is MYSQL_URL (callers and tests that know of no replica). */
export function readStoreOf(config: ReadStoreConfig | string): ReadStore {
  const { MYSQL_URL, MYSQL_READ_URL } = typeof config === 'string' ? { MYSQL_URL: config } : config;
  if (MYSQL_READ_URL !== undefined && MYSQL_READ_URL !== '' && MYSQL_READ_URL !== MYSQL_URL) {
    return { url: MYSQL_READ_URL, variable: 'MYSQL_READ_URL', replica: true };
  }
  return { url: MYSQL_URL, variable: 'MYSQL_URL', replica: false };
}

/**
 * A pool for reads that may lag. On a replica the database is never created (a replica is read-only and has its
 * primary's), and messages name MYSQL_READ_URL; without one it is MYSQL_URL's pool, exactly as before.
 */
export async function createReadPool(
  config: ReadStoreConfig | string,
  options: Omit<StorePoolOptions, 'variable' | 'createDatabase' | 'multipleStatements'> = {},
): Promise<Pool> {
  const store = readStoreOf(config);
  if (!store.replica) return createStorePool(store.url, options);
  const pool = await createStorePool(store.url, {
    ...options,
    variable: store.variable,
    createDatabase: false,
  });
  return namingLostConnections(pool, parseMysqlUrl(store.url), store.variable);
}

/**
 * The replica lost after its pool was made (stopped, unreachable): its statements fail as a store unreachable
 * naming MYSQL_READ_URL, its password hidden, as at connect: the API answers 503 and the console says which store.
 * The driver's own error would name nothing, and the API would answer it as an internal error.
 */
function namingLostConnections(pool: Pool, target: MysqlTarget, variable: string): Pool {
  const named = (error: unknown): never => {
    throw isConnectionFailure(error) ? connectError(target, error, variable) : error;
  };
  return new Proxy(pool, {
    get(real, property) {
      const value: unknown = Reflect.get(real, property, real);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (property === 'query' || property === 'execute' || property === 'getConnection') {
        return (...args: unknown[]) => (method.apply(real, args) as Promise<unknown>).catch(named);
      }
      return method.bind(real);
    },
  });
}
