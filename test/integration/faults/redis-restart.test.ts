// Fault suite, Redis restart: a batch through 2 workers on a private redis-server with append-only
// persistence (appendfsync always), killed with SIGKILL mid-batch and started again on the same port and
// directory. Every task ends with one result and one agent_runs row, and the batch summary is complete.
import { afterAll, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { printFigures, seconds } from '../../support/fault-figures.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { notExactlyOnce, resultsPerJob, runRecords } from '../../support/fleet-counts.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/private-redis.js';
import { durationFromEnv, faultSeed, seededRandom } from '../../support/seeded-random.js';
import { stepsModel } from '../../support/steps-model.js';

const SEED = faultSeed(20_261_202);
const TASKS = 30;
const DOWN_MS = durationFromEnv('FAULT_REDIS_DOWN_MS', 3_000);
const random = seededRandom(SEED);
const plans = Array.from({ length: TASKS }, (_, i) => ({ name: `r${i}`, steps: random.int(2, 4) }));
const expectedCalls = plans.reduce((sum, p) => sum + p.steps, 0);

let redis: PrivateRedis;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
const workers: WorkerHandle[] = [];
let reachedCut: () => void = () => undefined;
const cutReached = new Promise<void>((resolve) => (reachedCut = resolve));

setupOrFail(async () => {
  redis = await startPrivateRedis();
  ns = createNamespace('faults-redis');
  client = new FleetClient({ redisUrl: redis.url, prefix: ns.prefix });
  model = await startScriptedModel({
    latencyMs: 200,
    rules: [
      (request) => {
        // A third of the way into the batch.
        if (model.requests.length >= Math.floor(expectedCalls / 3)) reachedCut();
        return stepsModel(request);
      },
    ],
  });
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await client?.close();
  await ns?.cleanup();
  await model?.close();
  await redis?.close();
});

it('a Redis restart mid-batch: every task one result and one row, the batch summary complete', async () => {
  // Printed first, so a run that times out can still be replayed.
  printFigures('redis-restart start', { seed: SEED, replay: `FAULT_SEED=${SEED}` });
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorker(ns, {
        REDIS_URL: redis.url,
        OPENAI_BASE_URL: model.baseURL,
        AGENT_PROTOCOL: 'json',
        AGENT_MAX_COST_USD: '1',
        WORKER_CONCURRENCY: '5',
        WORKER_LOCK_DURATION_MS: '5000',
        WORKER_STALLED_INTERVAL_MS: '2000',
        METRICS_PORT: '0',
      }),
    );
  }
  await Promise.all(workers.map((w) => w.waitForOutput(/worker started/, 60_000)));
  const startedAt = Date.now();
  const tasks = plans.map((p) => ({ task: `job ${p.name}: ${p.steps} steps` }));
  const { batchId, jobIds } = await client.enqueueBatch({ tasks, name: 'redis restart' });

  await cutReached;
  const resultsBeforeCut = (await Promise.all(jobIds.map((id) => client.getResult(id)))).filter(
    Boolean,
  ).length;
  const killedAt = Date.now();
  await redis.kill();
  await new Promise((resolve) => setTimeout(resolve, DOWN_MS));
  await redis.start();
  const downMs = Date.now() - killedAt;

  const status = await client.waitForBatch(batchId, { timeoutMs: 240_000 });
  const durationMs = Date.now() - startedAt;
  const results = await Promise.all(jobIds.map((id) => client.getResult(id)));
  const published = await resultsPerJob(redis.url, ns.prefix);
  const records = await runRecords(ns);
  const rowCounts = new Map(jobIds.map((id) => [id, records.get(id)?.length ?? 0]));
  printFigures('redis-restart', {
    seed: SEED,
    tasks: TASKS,
    workers: workers.length,
    resultsBeforeKill: resultsBeforeCut,
    redisDownS: seconds(downMs),
    succeeded: status.summary.succeeded,
    failed: status.summary.failed,
    stopped: status.summary.stopped,
    modelCalls: model.requests.length,
    expectedCalls,
    maxAttempts: Math.max(0, ...[...records.values()].flat().map((r) => r.attempts)),
    durationS: seconds(durationMs),
  });

  expect(resultsBeforeCut).toBeLessThan(TASKS);
  expect(status.state).toBe('completed');
  expect(status.summary).toMatchObject({ batchId, tasks: TASKS, succeeded: TASKS, failed: 0, stopped: 0 });
  expect(results.map((r) => r?.status)).toEqual(plans.map(() => 'succeeded'));
  plans.forEach((p, i) => expect(results[i]?.steps, p.name).toBe(p.steps));
  expect(notExactlyOnce(jobIds, published)).toEqual([]);
  expect(notExactlyOnce(jobIds, rowCounts)).toEqual([]);
  for (const id of jobIds) {
    const [record] = records.get(id) ?? [];
    expect(record, id).toMatchObject({ status: 'succeeded' });
    expect(record!.stepRows, id).toBe(record!.steps);
  }
  expect(model.failures).toEqual([]);
}, 300_000);
