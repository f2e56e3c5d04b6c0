// `npm run worker`: one stateless worker process. Migrates the store, then pulls agent-tasks until SIGTERM
// or SIGINT, which stop it taking jobs, let running ones finish or checkpoint them, and exit 0.
import { logCrashes } from '../src/logging/log-crashes.js';
import { createLogger } from '../src/logging/logger.js';
import { startWorkerProcess } from '../src/worker/worker-process.js';

const logger = createLogger('worker');
logCrashes(logger, 'worker');

// With DATA_MYSQL_URL unset the built-in tools read the demo's sales database: seeded here when absent, so a
// fresh machine works. The demo's code is loaded only then: the worker library itself never touches it.
const seedDemo = process.env['DATA_MYSQL_URL']
  ? undefined
  : async (env: { MYSQL_URL: string }) => {
      logger.info('the demo sales database is missing: seeding it (DATA_MYSQL_URL is unset)');
      const { seedDemoDatabase } = await import('../src/demo/seed-demo-database.js');
      await seedDemoDatabase({ adminUrl: env.MYSQL_URL });
    };
await startWorkerProcess({ logger, ...(seedDemo ? { whenDataDatabaseMissing: seedDemo } : {}) });
