// `npm run worker`: one stateless worker process. Migrates the store, then pulls agent-tasks until SIGTERM
// or SIGINT, which stop it taking jobs, let running ones finish or checkpoint them, and exit 0.
import { logCrashes } from '../src/logging/log-crashes.js';
import { createLogger } from '../src/logging/logger.js';
import { startWorkerProcess } from '../src/worker/worker-process.js';

const logger = createLogger('worker');
logCrashes(logger, 'worker');

await startWorkerProcess({ logger });
