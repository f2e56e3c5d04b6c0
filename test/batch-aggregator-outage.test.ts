// A batch's last task is recorded, then the store goes down before the batch parent runs: the parent waits for
// the store (delayed, no attempt spent) instead of burning its attempts, and completes the batch once it is back.
import { Writable } from 'node:stream';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentResult } from '../src/kernel/types.js';
import { BatchRecords } from '../src/batch/batch-record.js';
import type { BatchJobData } from '../src/batch/batch-schema.js';
import { createLogger } from '../src/logging/logger.js';
import { BATCHES_QUEUE, RESULTS_QUEUE } from '../src/queue/names.js';
import { BatchReportStore } from '../src/reports/report-store.js';
import { migrate } from '../src/store/migrate.js';
import { createStorePool } from '../src/store/pool.js';
import { createBatchAggregator } from '../src/worker/batch-aggregator.js';
import { failedResult } from '../src/worker/task-processor.js';
import { ResultPublisher } from '../src/worker/result-publisher.js';
import { createNamespace, queryStore, REDIS_URL, type FleetNamespace } from './support/fleet-harness.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';

let ns: FleetNamespace;
let proxy: TcpProxy;
let pool: Pool;
let connection: Redis;

beforeAll(async () => {
  ns = createNamespace('aggoutage');
  proxy = await startTcpProxy(3306);
  pool = await createStorePool(`mysql://root@127.0.0.1:${proxy.port}/${ns.database}`, {
    connectTimeout: 2_000,
  });
  await migrate(pool, { logger: createLogger('test', 'silent') });
  connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
});

afterAll(async () => {
  connection.disconnect();
  await pool.end();
  await proxy.close();
  await ns.cleanup();
});

it('a batch parent that meets the store down waits for it without spending its attempts', async () => {
  const results = new Queue(RESULTS_QUEUE, { connection, prefix: ns.prefix });
  const batches = new Queue(BATCHES_QUEUE, { connection, prefix: ns.prefix });
  const result: AgentResult = {
    ...failedResult('outage-1', { kind: 'system', code: 'x', message: 'x', retryable: false }),
    status: 'succeeded',
    stopReason: 'answer',
    answer: 'done',
    error: null,
  };
  await new ResultPublisher(results).publish(result);
  const data: BatchJobData = {
    batchId: 'outage',
    name: null,
    jobIds: ['outage-1'],
    budget: null,
    createdAt: new Date().toISOString(),
  };
  const lines: string[] = [];
  const logStream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString('utf8'));
      callback();
    },
  });
  await proxy.cut();
  // Few, fast attempts: without waiting for the store, the parent fails for good within a second.
  await batches.add('batch', data, { jobId: 'outage', attempts: 3, backoff: { type: 'fixed', delay: 100 } });
  const aggregator = new Worker(
    BATCHES_QUEUE,
    createBatchAggregator({
      results,
      records: new BatchRecords(pool),
      reports: new BatchReportStore(pool),
      logger: createLogger('test', 'info', logStream),
      storeRetryMs: 300,
    }),
    { connection, prefix: ns.prefix },
  );
  try {
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const parent = await batches.getJob('outage');
    expect(await parent!.getState()).not.toBe('failed');
    expect(parent!.attemptsMade).toBe(0);
    // Tried again every 300 ms, said once.
    expect(lines.join('').match(/batch waits for the store/g)).toHaveLength(1);
    await proxy.restore();
    const deadline = Date.now() + 30_000;
    while ((await (await batches.getJob('outage'))!.getState()) !== 'completed') {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const rows = await queryStore<{ state: string }>(
      ns,
      'SELECT state FROM agent_batches WHERE batch_id = ?',
      ['outage'],
    );
    expect(rows.map((r) => r.state)).toEqual(['completed']);
  } finally {
    await aggregator.close();
    await results.close();
    await batches.close();
  }
}, 60_000);
