// The one path that makes a job's outcome final (src/worker/run-finisher.ts), in process against real Redis and
// MariaDB behind a proxy the test cuts: while MySQL is down nothing is published and the outcome waits in Redis;
// once it is back the sweep writes the start, the parked traces and the finish, publishes once and counts once;
// finishing the same job again (a redelivery) records, publishes and counts nothing more.
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentResult, StepTrace } from '../../../src/kernel/types.js';
import { parseEnv } from '../../../config/env.js';
import { createLogger } from '../../../src/logging/logger.js';
import { FleetMetrics } from '../../../src/metrics/fleet-metrics.js';
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
import { failedResult } from '../../../src/worker/task-processor.js';
import { createNamespace, queryStore, REDIS_URL, type FleetNamespace } from '../../support/fleet-harness.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

let ns: FleetNamespace;
let proxy: TcpProxy;
let pool: Pool;
let redis: Redis;
let results: Queue;

beforeAll(async () => {
  ns = createNamespace('finisher');
  proxy = await startTcpProxy(3306);
  pool = await createStorePool(`mysql://root@127.0.0.1:${proxy.port}/${ns.database}`, {
    connectionLimit: 2,
    multipleStatements: true,
    connectTimeout: 2_000,
  });
  await migrate(pool);
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  results = new Queue(RESULTS_QUEUE, { connection: redis, prefix: ns.prefix });
});

afterAll(async () => {
  await results.close();
  await deleteKeysWithPrefix(redis, ns.prefix);
  redis.disconnect();
  await pool.end();
  await proxy.close();
  await ns.cleanup();
});

const trace = (step: number): StepTrace =>
  ({
    runId: 'x',
    step,
    kind: 'action',
    actions: [],
    observations: [`observation ${step}`],
    promptTokens: 10,
    completionTokens: 5,
    costUsd: 0,
    latencyMs: 1,
    modelLatencyMs: 1,
    modelCalls: 1,
    error: null,
  }) as unknown as StepTrace;

async function jobsCounted(metrics: FleetMetrics): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name.endsWith('jobs_total'));
  return (metric?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

it('a job failed for good while MySQL is down: kept, then recorded, published and counted once by the sweep', async () => {
  const env = parseEnv({ ...process.env, QUEUE_PREFIX: ns.prefix });
  const metrics = new FleetMetrics({ defaultMetrics: false });
  const outcomes = new OutcomeStore(redis, ns.prefix);
  const publisher = new ResultPublisher(results);
  const finisher = new RunFinisher({
    env,
    journal: new RunJournal(new RunsRepository(pool)),
    redis,
    outcomes,
    publisher,
    metrics,
    logger: createLogger('test', 'silent'),
  });
  const jobId = `job-${randomBytes(3).toString('hex')}`;
  const result: AgentResult = failedResult(jobId, {
    kind: 'system',
    code: 'attempts_exhausted',
    message: 'Failed after 2 attempts: stalled',
    retryable: false,
  });
  const start = { jobId, task: 'a task', model: 'gpt-4.1-mini', protocol: 'json' as const, attempt: 2 };
  await redis.hset(parkedTracesKey(ns.prefix, jobId), '1', JSON.stringify(trace(1)));

  await proxy.cut();
  const down = await finisher.finish({ result, start, recheck: true, whileDown: 'sweep' });
  expect(down).toMatchObject({ kept: true, recordTries: 1 });
  expect(await outcomes.unrecorded(10)).toEqual([jobId]);
  expect(await publisher.isPublished(jobId)).toBe(false);
  expect(await jobsCounted(metrics)).toBe(0);

  await proxy.restore();
  await finisher.sweep();
  expect(await publisher.isPublished(jobId)).toBe(true);
  expect(await jobsCounted(metrics)).toBe(1);
  const runs = await queryStore<{ status: string; attempts: number }>(
    ns,
    'SELECT status, attempts FROM agent_runs WHERE job_id = ?',
    [jobId],
  );
  expect(runs).toMatchObject([{ status: 'failed', attempts: 2 }]);
  const steps = await queryStore<{ step: number }>(ns, 'SELECT step FROM agent_steps WHERE job_id = ?', [
    jobId,
  ]);
  expect(steps).toMatchObject([{ step: 1 }]);
  await expect.poll(async () => redis.exists(parkedTracesKey(ns.prefix, jobId))).toBe(0);
  expect(await outcomes.unrecorded(10)).toEqual([]);

  // Delivered again (a worker died before the job completed): nothing recorded, published or counted twice.
  const other = failedResult(jobId, { kind: 'system', code: 'other', message: 'other', retryable: false });
  expect(await finisher.finish({ result: other, start, recheck: true, whileDown: 'redeliver' })).toEqual({
    kept: false,
    published: false,
  });
  expect(await jobsCounted(metrics)).toBe(1);
  expect(await results.getJobCountByTypes('waiting', 'completed', 'failed', 'active', 'delayed')).toBe(1);
  const [run] = await queryStore<{ error: string }>(ns, 'SELECT error FROM agent_runs WHERE job_id = ?', [
    jobId,
  ]);
  expect(JSON.stringify(run)).toContain('attempts_exhausted');
}, 60_000);

it('two workers sweeping at once: the kept outcome is published and counted once, not once per worker', async () => {
  const env = parseEnv({ ...process.env, QUEUE_PREFIX: ns.prefix });
  const outcomes = new OutcomeStore(redis, ns.prefix);
  const publisher = new ResultPublisher(results);
  const workers = [0, 1].map(() => {
    const metrics = new FleetMetrics({ defaultMetrics: false });
    const finisher = new RunFinisher({
      env,
      journal: new RunJournal(new RunsRepository(pool)),
      redis,
      outcomes,
      publisher,
      metrics,
      logger: createLogger('test', 'silent'),
    });
    return { metrics, finisher };
  });
  const jobId = `job-${randomBytes(3).toString('hex')}`;
  const result = failedResult(jobId, {
    kind: 'system',
    code: 'attempts_exhausted',
    message: 'Failed after 2 attempts: stalled',
    retryable: false,
  });
  const start = { jobId, task: 'a task', model: 'gpt-4.1-mini', protocol: 'json' as const, attempt: 2 };
  await outcomes.keepUnrecorded(jobId, { result, started: false, recordTries: 1, start });

  await Promise.all(workers.map((w) => w.finisher.sweep()));
  expect(await publisher.isPublished(jobId)).toBe(true);
  const counted = await Promise.all(workers.map((w) => jobsCounted(w.metrics)));
  expect(counted[0]! + counted[1]!).toBe(1);
  expect(await outcomes.unrecorded(10)).toEqual([]);
}, 60_000);

it('two attempts overlapped: the later one, finding the result out, writes the published record back', async () => {
  const env = parseEnv({ ...process.env, QUEUE_PREFIX: ns.prefix });
  const journal = new RunJournal(new RunsRepository(pool));
  const finisher = new RunFinisher({
    env,
    journal,
    redis,
    outcomes: new OutcomeStore(redis, ns.prefix),
    publisher: new ResultPublisher(results),
    logger: createLogger('test', 'silent'),
  });
  const jobId = `job-${randomBytes(3).toString('hex')}`;
  const start = { jobId, task: 'a task', model: 'gpt-4.1-mini', protocol: 'json' as const, attempt: 1 };
  const error = { kind: 'system' as const, code: 'unused', message: 'unused', retryable: false };
  const first: AgentResult = {
    ...failedResult(jobId, error),
    status: 'succeeded',
    stopReason: 'answer',
    answer: 'first',
    error: null,
  };
  await journal.start(start);
  expect(await finisher.finish({ result: first, start, whileDown: 'redeliver' })).toEqual({
    kept: false,
    published: true,
  });

  // The second attempt started while the first was finishing: its start set the record back to `running`.
  await journal.start({ ...start, attempt: 2 });
  const started = () => Promise.resolve();
  const second: AgentResult = { ...first, answer: 'second' };
  expect(
    await finisher.finish({ result: second, start, started, recheck: true, whileDown: 'redeliver' }),
  ).toEqual({ kept: false, published: false });
  const runs = await queryStore<{ status: string; answer: string }>(
    ns,
    'SELECT status, answer FROM agent_runs WHERE job_id = ?',
    [jobId],
  );
  expect(runs).toEqual([{ status: 'succeeded', answer: 'first' }]);
}, 60_000);
