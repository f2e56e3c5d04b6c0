// `npm run worker`: one stateless worker process. Migrates the store, then pulls agent-tasks until SIGTERM
// or SIGINT, which stop it taking jobs, let running ones finish or checkpoint them, and exit 0.
// `npm run worker -- --processes N|auto`: N of them under a supervisor (src/worker/supervisor.ts), which forks
// this same file with `--process-index I` for each.
import { fileURLToPath } from 'node:url';
import { logCrashes } from '../src/logging/log-crashes.js';
import { createLogger } from '../src/logging/logger.js';
import { usableCores } from '../src/util/usable-cores.js';
import { HURRY_MESSAGE } from '../src/worker/supervisor.js';
import { parseWorkerArgs } from '../src/worker/worker-args.js';

const args = parseWorkerArgs(process.argv.slice(2), usableCores());
if (typeof args === 'string') {
  process.stderr.write(`worker: ${args}\n`);
  process.exit(2);
}
const root = createLogger('worker');
const logger = args.processIndex === undefined ? root : root.child({ processIndex: args.processIndex });
logCrashes(logger, 'worker');

if (args.processes !== undefined) {
  // Loaded only here: the supervisor runs no job, and its children load the worker themselves.
  const { runSupervisor } = await import('../src/worker/run-supervisor.js');
  runSupervisor({ processes: args.processes, entry: fileURLToPath(import.meta.url), logger });
} else {
  // Forked by a supervisor: known now, while the channel is open, for a supervisor may die while this starts.
  const supervised = process.channel !== undefined;
  const { startWorkerProcess } = await import('../src/worker/worker-process.js');
  // With DATA_MYSQL_URL unset the built-in tools read the demo's sales database: seeded here when absent, so
  // a fresh machine works. The demo's code is loaded only then: the worker library itself never touches it.
  const seedDemo = process.env['DATA_MYSQL_URL']
    ? undefined
    : async (env: { MYSQL_URL: string }) => {
        logger.info('the demo sales database is missing: seeding it (DATA_MYSQL_URL is unset)');
        const { seedDemoDatabase } = await import('../src/demo/seed-demo-database.js');
        await seedDemoDatabase({ adminUrl: env.MYSQL_URL });
      };
  const worker = await startWorkerProcess({
    logger,
    ...(seedDemo ? { whenDataDatabaseMissing: seedDemo } : {}),
  });
  if (supervised) {
    // A child whose supervisor is gone (killed outright) stops the graceful way instead of running on
    // unsupervised: the IPC channel fork() opened closes when the supervisor dies, maybe before this started.
    const orphaned = () => {
      logger.warn('the supervisor is gone: stopping');
      worker.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    if (process.connected) process.once('disconnect', orphaned);
    else orphaned();
    // Its third signal: running jobs are released, saved, as this process's own third signal does.
    process.on('message', (message) => {
      if (message === HURRY_MESSAGE) worker.worker.releaseRunningJobs('asked again');
    });
  }
}
