// A child process running a bare BullMQ Worker with an empty processor: the queue's own cost per job on this
// machine, measured from outside like the agent worker's. env: REDIS_URL, BENCH_PREFIX, BENCH_QUEUE,
// BENCH_CONCURRENCY. Sends { type: 'ready' } over IPC once the worker is connected; exits when the parent
// goes away.
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
});
const worker = new Worker(process.env.BENCH_QUEUE ?? 'noop', async () => undefined, {
  connection,
  prefix: process.env.BENCH_PREFIX ?? 'bench-noop',
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? '50'),
});
worker.on('error', (error) => process.stderr.write(`noop worker: ${error.message}\n`));
await worker.waitUntilReady();
process.send?.({ type: 'ready' });
process.on('disconnect', () => {
  void worker.close().finally(() => {
    connection.disconnect();
    process.exit(0);
  });
});
