// MySQL going away mid-run loses nothing: writes are retried, traces stay parked in Redis, and the finished
// run's outcome waits there (the job delayed, no attempt spent) until its record can be written; the job never
// completes without its record.
import { turnsIn } from '../../../src/testing/transcript.js';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TASKS_QUEUE } from '../../../src/queue/names.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
} from '../../support/fleet-harness.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

let server: ScriptedModelServer;
let ns: FleetNamespace;
let proxy: TcpProxy;

beforeAll(async () => {
  ns = createNamespace('outage');
  proxy = await startTcpProxy(3306);
  // Three steps, the second slow enough to cut the store while it runs.
  server = await startScriptedModel({
    rules: [
      (r) => {
        const done = turnsIn(r.messages);
        if (done < 2)
          return {
            actions: [{ tool: 'list_tables', args: { page: done } }],
            latencyMs: done === 1 ? 1_500 : 0,
          };
        return { answer: 'done despite the outage' };
      },
    ],
  });
});

afterAll(async () => {
  await proxy.close();
  await ns.cleanup();
  await server.close();
});

it('a job whose store goes down mid-run waits for it and completes with its full record', async () => {
  const worker = startWorker(ns, {
    OPENAI_BASE_URL: server.baseURL,
    AGENT_PROTOCOL: 'json',
    MYSQL_URL: `mysql://root@127.0.0.1:${proxy.port}/${ns.database}`,
  });
  try {
    await worker.waitForOutput(/worker started/);
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const tasks = new Queue(TASKS_QUEUE, { connection, prefix: ns.prefix });
    const job = await tasks.add(
      'agent-task',
      { task: 'survive an outage' },
      { attempts: 5, backoff: { type: 'fixed', delay: 1_000 } },
    );
    await worker.waitForOutput(/"step":1,/);
    await proxy.cut();
    // Not the store sweeper's lines ("store sweep done"): the outage's.
    await worker.waitForOutput(/will be retried|trace write failed|ECONNREFUSED|store_un/i, 20_000);
    // Longer than the in-job retries of the writes.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await proxy.restore();

    const result = await ns.client.waitForResult(String(job.id), { timeoutMs: 40_000 });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'done despite the outage', steps: 3 });
    const [run] = await queryStore<{ status: string; steps: number; attempts: number }>(
      ns,
      'SELECT status, steps, attempts FROM agent_runs WHERE job_id = ?',
      [String(job.id)],
    );
    // One attempt: a run that needs nothing from the store but its record is not made again.
    expect(run).toMatchObject({ status: 'succeeded', steps: 3, attempts: 1 });
    expect(worker.output()).toMatch(/MySQL is unreachable: record kept/);
    const steps = await queryStore<{ step: number }>(
      ns,
      'SELECT step FROM agent_steps WHERE job_id = ? ORDER BY step',
      [String(job.id)],
    );
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3]);
    // The finished steps were not asked again.
    expect(server.requests.filter((r) => r.messages.length === 2)).toHaveLength(1);
    await tasks.close();
    connection.disconnect();
  } finally {
    await killWorker(worker);
  }
}, 60_000);
