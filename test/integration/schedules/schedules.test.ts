// Schedules: registered once however many processes start, fired on time into an ordinary batch, listed and
// removed from the CLI; a bad schedules file stops a worker with a line naming the field.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEDULES_QUEUE } from '../../../src/queue/names.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { stepsModel } from '../../support/steps-model.js';

let server: ScriptedModelServer;
let ns: FleetNamespace;
let dir: string;
const workers: WorkerHandle[] = [];

const schedules = {
  schedules: [
    {
      name: 'every-second',
      cron: '* * * * * *',
      batch: { tasks: [{ task: 'job tick: 1 steps' }], budget: { maxCostUsd: 0.5 } },
    },
    {
      name: 'nightly',
      cron: '0 2 * * *',
      timezone: 'Europe/Berlin',
      batch: { tasks: [{ task: 'job night: 1 steps' }] },
    },
  ],
};

beforeAll(async () => {
  server = await startScriptedModel({ rules: [stepsModel] });
  ns = createNamespace('schedules');
  dir = await mkdtemp(join(tmpdir(), 'af-schedules-'));
  await writeFile(join(dir, 'schedules.json'), JSON.stringify(schedules));
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await ns.cleanup();
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

function run(
  script: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    env: { ...process.env, REDIS_URL, QUEUE_PREFIX: ns.prefix, SCHEDULES_FILE: join(dir, 'schedules.json') },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('schedules', () => {
  it('register once however many processes start, and fire into a batch', async () => {
    for (let i = 0; i < 3; i++) {
      workers.push(
        startWorker(ns, {
          OPENAI_BASE_URL: server.baseURL,
          AGENT_PROTOCOL: 'json',
          SCHEDULES_FILE: join(dir, 'schedules.json'),
        }),
      );
    }
    await Promise.all(workers.map((w) => w.waitForOutput(/worker started/)));
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const queue = new Queue(SCHEDULES_QUEUE, { connection, prefix: ns.prefix });
    try {
      expect(await queue.getJobSchedulersCount()).toBe(2);
      const listed = await run('scripts/schedules.ts', ['list']);
      expect(listed.code).toBe(0);
      const names = listed.stdout
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { name: string }).name);
      expect(names.sort()).toEqual(['every-second', 'nightly']);
      expect(listed.stdout).toMatch(/"timezone":"Europe\/Berlin"/);

      // The every-second schedule fires: its batch runs like any other.
      await expect
        .poll(
          () =>
            workers.some((w) => /"schedule":"every-second","batchId":"every-second-\d+"/.test(w.output())),
          {
            timeout: 15_000,
            interval: 200,
          },
        )
        .toBe(true);
      const batchId = /"batchId":"(every-second-\d+)"/.exec(workers.map((w) => w.output()).join('\n'))![1]!;
      const status = await ns.client.waitForBatch(batchId, { timeoutMs: 20_000 });
      expect(status.summary).toMatchObject({ tasks: 1, succeeded: 1 });

      // Removed from the CLI, it stops firing.
      const removed = await run('scripts/schedules.ts', ['remove', 'every-second']);
      expect(removed.code).toBe(0);
      expect(await queue.getJobSchedulersCount()).toBe(1);
      expect((await run('scripts/schedules.ts', ['remove', 'no-such'])).code).toBe(1);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  }, 60_000);

  it('a bad schedules file stops a worker with one line naming the field', async () => {
    const bad = join(dir, 'bad.json');
    await writeFile(
      bad,
      JSON.stringify({ schedules: [{ name: 'x', cron: 'every night', batch: { tasks: [] } }] }),
    );
    const worker = startWorker(ns, { OPENAI_BASE_URL: server.baseURL, SCHEDULES_FILE: bad });
    workers.push(worker);
    const exit = await worker.exited;
    expect(exit.code).toBe(1);
    expect(worker.output()).toMatch(/schedules\.0\.cron/);
    expect(worker.output()).toMatch(/schedules\.0\.batch\.tasks/);
  }, 30_000);
});
