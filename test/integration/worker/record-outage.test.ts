// The store goes down as runs finish and stays down far longer than the jobs' retries would cover: the outcomes
// wait in Redis (jobs delayed, not failed), nothing is published without its record, and once MySQL is back every
// task has its agent_runs row, its steps and exactly one result.
import { turnsIn } from '../../../src/testing/transcript.js';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TASK_JOB_OPTIONS } from '../../../src/queue/job-options.js';
import { RESULTS_QUEUE, TASK_JOB_NAME, TASKS_QUEUE } from '../../../src/queue/names.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

const TASKS = 20;
// 40 s by default; RECORD_OUTAGE_MS measures a longer one (docs/outages.md quotes a 5-minute run).
const OUTAGE_MS = Number(process.env['RECORD_OUTAGE_MS'] ?? 40_000);

let server: ScriptedModelServer;
let ns: FleetNamespace;
let proxy: TcpProxy;

beforeAll(async () => {
  ns = createNamespace('record');
  proxy = await startTcpProxy(3306);
  // Two steps; the first one slow enough to cut the store after every run has started.
  server = await startScriptedModel({
    rules: [
      (r) =>
        turnsIn(r.messages) > 0
          ? { answer: 'recorded after the outage' }
          : { actions: [{ tool: 'list_tables', args: {} }], latencyMs: 3_000 },
    ],
  });
});

afterAll(async () => {
  await proxy.close();
  await ns.cleanup();
  await server.close();
});

it(
  'runs that finish while the store is down get their record, steps and one result once it is back',
  async () => {
    const env = {
      OPENAI_BASE_URL: server.baseURL,
      MYSQL_URL: `mysql://root@127.0.0.1:${proxy.port}/${ns.database}`,
      WORKER_RETRY_BASE_MS: '500',
      WORKER_RETRY_MAX_MS: '2000',
    };
    const workers: WorkerHandle[] = [startWorker(ns, env), startWorker(ns, env)];
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const tasks = new Queue(TASKS_QUEUE, { connection, prefix: ns.prefix });
    const results = new Queue(RESULTS_QUEUE, { connection, prefix: ns.prefix });
    try {
      await Promise.all(workers.map((worker) => worker.waitForOutput(/worker started/)));
      // Three attempts, as the fleet had: their retries (0.5 + 1 s here) cover a tiny part of the outage.
      const jobs = await tasks.addBulk(
        Array.from({ length: TASKS }, (_, i) => ({
          name: TASK_JOB_NAME,
          data: { task: `list the tables (${i})` },
          opts: { ...TASK_JOB_OPTIONS, attempts: 3 },
        })),
      );
      const ids = jobs.map((job) => String(job.id));
      await expect
        .poll(
          async () => (await queryStore<{ n: number }>(ns, 'SELECT COUNT(*) AS n FROM agent_runs'))[0]!.n,
          {
            timeout: 20_000,
            interval: 100,
          },
        )
        .toBe(TASKS);
      await proxy.cut();
      const cutAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS - (Date.now() - cutAt)));

      // Still down: nothing published, nothing failed; every run is done and waits with its outcome.
      expect(await results.getJobCountByTypes('waiting', 'completed', 'failed', 'active', 'delayed')).toBe(0);
      const states = await Promise.all(ids.map(async (id) => (await tasks.getJob(id))!.getState()));
      expect(states.filter((state) => state === 'failed')).toEqual([]);
      expect(server.requests).toHaveLength(2 * TASKS);
      await proxy.restore();

      const published = await Promise.all(
        ids.map((id) => ns.client.waitForResult(id, { timeoutMs: 40_000 })),
      );
      for (const result of published) {
        expect(result).toMatchObject({ status: 'succeeded', answer: 'recorded after the outage', steps: 2 });
      }
      // Exactly one result each.
      expect(await results.getJobCountByTypes('waiting', 'completed', 'failed', 'active', 'delayed')).toBe(
        TASKS,
      );
      const runs = await queryStore<{
        job_id: string;
        status: string;
        steps: number;
        finished_at: Date | null;
      }>(ns, 'SELECT job_id, status, steps, finished_at FROM agent_runs');
      expect(runs.map((run) => run.job_id).sort()).toEqual([...ids].sort());
      for (const run of runs) {
        expect(run).toMatchObject({ status: 'succeeded', steps: 2 });
        expect(run.finished_at).not.toBeNull();
      }
      const steps = await queryStore<{ job_id: string; n: number }>(
        ns,
        'SELECT job_id, COUNT(*) AS n FROM agent_steps GROUP BY job_id',
      );
      expect(steps).toHaveLength(TASKS);
      for (const row of steps) expect(Number(row.n)).toBe(2);
      // The runs were not made again: no model call after the outage.
      expect(server.requests).toHaveLength(2 * TASKS);
    } finally {
      await Promise.all(workers.map(killWorker));
      await tasks.close();
      await results.close();
      connection.disconnect();
    }
  },
  OUTAGE_MS + 110_000,
);

it('a task that never runs while the store is down waits delayed, then is recorded and published once', async () => {
  const worker = startWorker(ns, {
    OPENAI_BASE_URL: server.baseURL,
    MYSQL_URL: `mysql://root@127.0.0.1:${proxy.port}/${ns.database}`,
    WORKER_RETRY_BASE_MS: '500',
    WORKER_RETRY_MAX_MS: '2000',
  });
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const tasks = new Queue(TASKS_QUEUE, { connection, prefix: ns.prefix });
  const results = new Queue(RESULTS_QUEUE, { connection, prefix: ns.prefix });
  try {
    await worker.waitForOutput(/worker started/);
    const resultsBefore = await results.getJobCountByTypes(
      'waiting',
      'completed',
      'failed',
      'active',
      'delayed',
    );
    await proxy.cut();
    // An invalid task fails at once, but its record cannot be written: its outcome waits, no attempt spent.
    const job = await tasks.add(TASK_JOB_NAME, { task: '' }, { attempts: 1 });
    await worker.waitForOutput(/MySQL is unreachable: record kept/, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // several redeliveries, still down
    expect(await (await tasks.getJob(String(job.id)))!.getState()).not.toBe('failed');
    expect(await ns.client.getResult(String(job.id))).toBeNull();
    await proxy.restore();

    const result = await ns.client.waitForResult(String(job.id), { timeoutMs: 20_000 });
    expect(result).toMatchObject({ status: 'failed', error: { code: 'invalid_task', retryable: false } });
    await expect.poll(async () => (await tasks.getJob(String(job.id)))!.getState()).toBe('failed');
    const [run] = await queryStore<{ status: string }>(ns, 'SELECT status FROM agent_runs WHERE job_id = ?', [
      String(job.id),
    ]);
    expect(run).toMatchObject({ status: 'failed' });
    expect(await results.getJobCountByTypes('waiting', 'completed', 'failed', 'active', 'delayed')).toBe(
      resultsBefore + 1,
    );
  } finally {
    await killWorker(worker);
    await tasks.close();
    await results.close();
    connection.disconnect();
  }
}, 60_000);
