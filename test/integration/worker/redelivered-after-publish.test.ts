// A job delivered again after its result went out (its worker died between the publish and BullMQ completing
// it, or its lock was lost meanwhile) neither runs again nor touches its record: a start written again would set
// agent_runs back to `running`, and the finish that follows skips the record of a published result.
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
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { requestsFor, stepsModel } from '../../support/steps-model.js';

let server: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;

beforeAll(async () => {
  server = await startScriptedModel({ rules: [stepsModel] });
  ns = createNamespace('redelivered');
  worker = startWorker(ns, {
    OPENAI_BASE_URL: server.baseURL,
    AGENT_PROTOCOL: 'json',
    AGENT_MAX_COST_USD: '1',
  });
  await worker.waitForOutput(/worker started/);
});

afterAll(async () => {
  await killWorker(worker);
  await ns.cleanup();
  await server.close();
});

it('a completed job delivered again keeps its finished record and calls no model', async () => {
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const tasks = new Queue(TASKS_QUEUE, { connection, prefix: ns.prefix });
  try {
    const { jobId } = await ns.client.enqueue({ task: 'job gamma: 2 steps' });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ status: 'succeeded', steps: 2 });
    await expect.poll(async () => (await ns.client.getTask(jobId)).state).toBe('completed');
    const calls = requestsFor(server, 'gamma').length;

    // Delivered again, as a stalled job is: its second start.
    await (await tasks.getJob(jobId))!.retry('completed');
    await expect.poll(async () => (await tasks.getJob(jobId))?.attemptsStarted, { timeout: 20_000 }).toBe(2);
    await expect
      .poll(async () => (await ns.client.getTask(jobId)).state, { timeout: 20_000 })
      .toBe('completed');

    const [run] = await queryStore<{ status: string; answer: string | null }>(
      ns,
      'SELECT status, answer FROM agent_runs WHERE job_id = ?',
      [jobId],
    );
    expect(run).toEqual({ status: 'succeeded', answer: result.answer });
    expect(requestsFor(server, 'gamma')).toHaveLength(calls);
    expect((await ns.client.getTask(jobId)).result).toEqual(result);
  } finally {
    await tasks.close();
    connection.disconnect();
  }
}, 60_000);
