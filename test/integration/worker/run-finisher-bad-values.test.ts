// A job whose record holds a value MySQL would refuse (a model's lone surrogate in a tool call's arguments, an
// endpoint's absurd token count) through the one path that makes its outcome final (run-finisher.ts), against
// real Redis and MariaDB: the parked trace and the result go in, and the result is published once. Before, the
// record failed the same way on every attempt and on the failure handler's path, and no result ever came out.
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentResult, StepTrace } from '../../../src/kernel/types.js';
import { parseEnv } from '../../../config/env.js';
import { createLogger } from '../../../src/logging/logger.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { RESULTS_QUEUE } from '../../../src/queue/names.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { RunsRepository } from '../../../src/store/runs-repository.js';
import { OutcomeStore } from '../../../src/worker/outcome-store.js';
import { ResultPublisher } from '../../../src/worker/result-publisher.js';
import { RunFinisher } from '../../../src/worker/run-finisher.js';
import { RunJournal } from '../../../src/worker/run-journal.js';
import { parkedTracesKey } from '../../../src/worker/trace-writer.js';
import { createNamespace, REDIS_URL, type FleetNamespace } from '../../support/fleet-harness.js';

let ns: FleetNamespace;
let pool: Pool;
let redis: Redis;
let results: Queue;

beforeAll(async () => {
  ns = createNamespace('finisher-bad');
  pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 2, multipleStatements: true });
  await migrate(pool);
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  results = new Queue(RESULTS_QUEUE, { connection: redis, prefix: ns.prefix });
});

afterAll(async () => {
  await results.close();
  await deleteKeysWithPrefix(redis, ns.prefix);
  redis.disconnect();
  await pool.end();
  await ns.cleanup();
});

it('a parked trace and a result MySQL would refuse as they are are recorded and published once', async () => {
  const env = parseEnv({ ...process.env, QUEUE_PREFIX: ns.prefix });
  const repository = new RunsRepository(pool);
  const publisher = new ResultPublisher(results);
  const finisher = new RunFinisher({
    env,
    journal: new RunJournal(repository, { delayMs: 10 }),
    redis,
    outcomes: new OutcomeStore(redis, ns.prefix),
    publisher,
    logger: createLogger('test', 'silent'),
  });
  const jobId = `job-${randomBytes(3).toString('hex')}`;
  const trace = {
    runId: jobId,
    step: 1,
    kind: 'action',
    actions: [
      { id: 'c1', tool: 'search', args: { q: 'lone \ud800' }, ok: true, errorCode: null, latencyMs: 1 },
    ],
    observations: ['found'],
    promptTokens: 3_000_000_000,
    completionTokens: 5,
    costUsd: 7_500,
    latencyMs: 1,
    modelLatencyMs: 1,
    modelCalls: 1,
    error: null,
  } as unknown as StepTrace;
  await redis.hset(parkedTracesKey(ns.prefix, jobId), '1', JSON.stringify(trace));
  const result: AgentResult = {
    jobId,
    status: 'stopped',
    stopReason: 'token_budget',
    answer: null,
    steps: 1,
    toolCalls: 1,
    usage: { promptTokens: 3_000_000_000, completionTokens: 5, totalTokens: 3_000_000_005, costUsd: 7_500 },
    error: null,
    output: { note: 'lone \udc00' },
  };
  const start = { jobId, task: 'a task', model: 'gpt-4.1-mini', protocol: 'json' as const, attempt: 1 };

  const finishing = Date.now();
  expect(await finisher.finish({ result, start, whileDown: 'redeliver' })).toEqual({
    kept: false,
    published: true,
  });
  // The run was never started: that answer is final, the start is written at once (not after 1.75 s of retries).
  expect(Date.now() - finishing).toBeLessThan(1_000);
  expect(await publisher.isPublished(jobId)).toBe(true);
  expect(await repository.getRun(jobId)).toMatchObject({ status: 'stopped', promptTokens: 2_147_483_647 });
  expect((await repository.getSteps(jobId)).map((s) => s.promptTokens)).toEqual([2_147_483_647]);
}, 60_000);
