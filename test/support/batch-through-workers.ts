// The body of the "a batch on this kind of Redis" tests (a cluster, Sentinel, with a password, over TLS): real worker
// processes on the Redis the test names, the client library enqueueing a batch, and the checks that every task ended
// with one result and one agent_runs row, the summary is complete and the batch's budget was booked and settled.
import { expect } from 'vitest';
import type { FleetClient } from '../../src/client/fleet-client.js';
import { SpendLedger } from '../../src/fleet/spend-ledger.js';
import type { RedisClient } from '../../src/queue/redis.js';
import type { ScriptedModelServer } from '../../src/testing/scripted-model-server.js';
import { notExactlyOnce, runRecords } from './fleet-counts.js';
import { startWorker, type FleetNamespace, type WorkerHandle } from './fleet-harness.js';

export interface BatchThroughWorkers {
  ns: FleetNamespace;
  client: FleetClient;
  /** A connection of the test's own to the same Redis: the spend ledger is read through it. */
  redis: RedisClient;
  model: ScriptedModelServer;
  /** The variables that name the Redis (REDIS_CLUSTER_NODES, REDIS_PASSWORD, …). */
  redisEnv: Record<string, string>;
  /** Where the workers started are kept, for the test's afterAll to kill. */
  workers: WorkerHandle[];
  workerCount?: number;
  tasks?: number;
  name: string;
}

/** Runs the batch and checks it (stepsModel's `job <name>: <n> steps` tasks); gives the batch's ids. */
export async function runBatchThroughWorkers(
  run: BatchThroughWorkers,
): Promise<{ batchId: string; jobIds: string[] }> {
  const { ns, client, redis, model } = run;
  const plans = Array.from({ length: run.tasks ?? 12 }, (_, i) => ({ name: `c${i}`, steps: 2 + (i % 3) }));
  const started = Array.from({ length: run.workerCount ?? 2 }, () =>
    startWorker(ns, {
      ...run.redisEnv,
      OPENAI_BASE_URL: model.baseURL,
      AGENT_PROTOCOL: 'json',
      AGENT_MAX_COST_USD: '1',
      WORKER_CONCURRENCY: '5',
    }),
  );
  run.workers.push(...started);
  await Promise.all(started.map((w) => w.waitForOutput(/worker started/, 60_000)));
  const tasks = plans.map((p) => ({ task: `job ${p.name}: ${p.steps} steps` }));
  const { batchId, jobIds } = await client.enqueueBatch({ tasks, name: run.name, budget: { maxCostUsd: 5 } });

  const status = await client.waitForBatch(batchId, { timeoutMs: 120_000 });
  const results = await Promise.all(jobIds.map((id) => client.getResult(id)));
  const records = await runRecords(ns);

  expect(status.state).toBe('completed');
  expect(status.summary).toMatchObject({
    batchId,
    tasks: plans.length,
    succeeded: plans.length,
    failed: 0,
    stopped: 0,
  });
  expect(results.map((r) => r?.status)).toEqual(plans.map(() => 'succeeded'));
  plans.forEach((p, i) => expect(results[i]?.steps, p.name).toBe(p.steps));
  const rowCounts = new Map(jobIds.map((id) => [id, records.get(id)?.length ?? 0]));
  expect(notExactlyOnce(jobIds, rowCounts)).toEqual([]);
  expect(model.requests.length).toBe(plans.reduce((sum, p) => sum + p.steps, 0));

  // The batch's budget scope holds what its tasks spent, every reservation settled.
  const spend = await new SpendLedger({ redis, prefix: ns.prefix }).getSpend(`batch:${batchId}`);
  expect(spend.usedUsd).toBeGreaterThan(0);
  expect(spend.usedUsd).toBeCloseTo(status.summary.usage.costUsd, 6);
  expect(spend.liveReservations).toBe(0);
  expect(spend.capUsd).toBe(5);
  return { batchId, jobIds };
}
