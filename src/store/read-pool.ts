// Which store serves the reads that may lag behind the fleet's writes: the run console, reports, forecasts, the
// batch and task reads of the HTTP API once Redis no longer has them, and `npm run trace`. With MYSQL_READ_URL set
// (a replica of MYSQL_URL's database), they read there; unset, from MYSQL_URL, as every other reader does.
// Everything a run needs to see its own writes (the worker, the effect ledger, approvals, notes recall, the store
// sweeper) never comes here: it stays on MYSQL_URL. The one place that decides (docs/store.md#replicas).
import type { Pool } from 'mysql2/promise';
import { createStorePool, type StorePoolOptions } from './pool.js';

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
export function createReadPool(
  config: ReadStoreConfig | string,
  options: Omit<StorePoolOptions, 'variable' | 'createDatabase' | 'multipleStatements'> = {},
): Promise<Pool> {
  const store = readStoreOf(config);
  return createStorePool(
    store.url,
    store.replica ? { ...options, variable: store.variable, createDatabase: false } : options,
  );
}
