// `npm run migrate`: creates or upgrades the store's schema (docs/store.md). Stdout gets one JSON line for
// scripts; progress goes to stderr through pino; a failure is one line on stderr and exit code 1.
import { env } from '../config/env.js';
import { createLogger } from '../src/logging/logger.js';
import { scrubText } from '../src/logging/redact.js';
import { migrate } from '../src/store/migrate.js';
import { parseMysqlUrl } from '../src/store/mysql-url.js';
import { createStorePool } from '../src/store/pool.js';

async function main(): Promise<void> {
  const { MYSQL_URL, LOG_LEVEL } = env();
  const logger = createLogger('migrate', LOG_LEVEL);
  const { database } = parseMysqlUrl(MYSQL_URL);
  const pool = await createStorePool(MYSQL_URL);
  try {
    const applied = await migrate(pool, { logger });
    process.stdout.write(JSON.stringify({ applied, database }) + '\n');
  } finally {
    await pool.end();
  }
}

main().catch((error: unknown) => {
  // Read directly: the failure may be a bad environment, in which case env() never parsed LOG_LEVEL.
  const debug = ['debug', 'trace'].includes(process.env['LOG_LEVEL'] ?? '');
  const line = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(
    `migrate failed: ${scrubText((debug && error instanceof Error ? error.stack : line) ?? line)}\n`,
  );
  process.exitCode = 1;
});
