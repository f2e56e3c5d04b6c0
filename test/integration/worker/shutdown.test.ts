// Shutdown the way it is deployed: the Dockerfile's CMD as a container runs it, signalled the way a container
// runtime signals it (SIGTERM to the process itself, sometimes twice); `npm run worker` signalled the way a
// terminal does it (the whole process group) and the way a supervisor does it (npm's pid only).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type StartOptions,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { stepsModel } from '../../support/steps-model.js';

/** The exec-form CMD of the Dockerfile, so this test follows whatever the image runs. */
function dockerfileCommand(): string[] {
  const line = readFileSync('Dockerfile', 'utf8')
    .split('\n')
    .findLast((l) => /^CMD\s/.test(l));
  if (!line) throw new Error('Dockerfile has no CMD');
  const command = JSON.parse(line.replace(/^CMD\s+/, '')) as unknown;
  if (!Array.isArray(command) || !command.every((part) => typeof part === 'string'))
    throw new Error(`Dockerfile CMD is not in exec form: ${line}`);
  return command;
}

let server: ScriptedModelServer;
let ns: FleetNamespace;
const workers: WorkerHandle[] = [];

function worker(env: Record<string, string>, options: StartOptions): WorkerHandle {
  const handle = startWorker(
    ns,
    {
      OPENAI_BASE_URL: server.baseURL,
      AGENT_PROTOCOL: 'json',
      AGENT_MAX_COST_USD: '1',
      WORKER_CONCURRENCY: '3',
      WORKER_LOCK_DURATION_MS: '2000',
      WORKER_STALLED_INTERVAL_MS: '1000',
      METRICS_PORT: '0',
      ...env,
    },
    options,
  );
  workers.push(handle);
  return handle;
}

/** Three 4-step jobs in flight on the worker, each past its first step. */
async function jobsInFlight(w: WorkerHandle, label: string): Promise<string[]> {
  await w.waitForOutput(/worker started/, 30_000);
  const jobs = await ns.client.enqueueMany(
    ['a', 'b', 'c'].map((name) => ({ task: `job ${label}${name}: 4 steps` })),
  );
  for (const { jobId } of jobs) await w.waitForOutput(new RegExp(`"jobId":"${jobId}","attempt":1,"step":1`));
  return jobs.map((job) => job.jobId);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  server = await startScriptedModel({ rules: [(r) => ({ ...stepsModel(r), latencyMs: 400 })] });
  ns = createNamespace('shutdown');
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await ns.cleanup();
  await server.close();
});

describe('the Dockerfile CMD', () => {
  it('runs the worker itself under node, with no npm or shell in between', () => {
    const command = dockerfileCommand();
    expect(command[0]).toBe('node');
    expect(command).not.toContain('npm');
  });

  it('SIGTERM, and a second one shortly after: running jobs finish, "worker stopped", exit 0', async () => {
    const w = worker({ WORKER_SHUTDOWN_GRACE_MS: '30000' }, { command: dockerfileCommand() });
    const jobIds = await jobsInFlight(w, 'docker');
    w.child.kill('SIGTERM');
    await sleep(300);
    w.child.kill('SIGTERM');
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(w.output()).toMatch(/shutdown already in progress/);
    expect(w.output()).toMatch(/worker stopped/);
    for (const jobId of jobIds)
      expect(await ns.client.getResult(jobId)).toMatchObject({ status: 'succeeded', steps: 4 });
  }, 60_000);

  it('a third signal stops waiting: running jobs are checkpointed and released, still exit 0', async () => {
    const w = worker({ WORKER_SHUTDOWN_GRACE_MS: '30000' }, { command: dockerfileCommand() });
    const jobIds = await jobsInFlight(w, 'hurry');
    for (let i = 0; i < 3; i++) {
      w.child.kill('SIGTERM');
      await sleep(100);
    }
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(w.output()).toMatch(/not waiting any longer/);
    expect(w.output()).toMatch(/released on shutdown/);
    expect(w.output()).toMatch(/worker stopped/);
    // Back in the queue at once, not stalled behind an expired lock, and resumed by the next worker.
    for (const jobId of jobIds) {
      const { state } = await ns.client.getTask(jobId);
      expect(['waiting', 'completed']).toContain(state);
    }
    const next = worker({}, {});
    for (const jobId of jobIds)
      expect(await ns.client.waitForResult(jobId, { timeoutMs: 30_000 })).toMatchObject({
        status: 'succeeded',
        steps: 4,
      });
    expect(next.output()).toMatch(/resuming from checkpoint/);
    await killWorker(next);
  }, 90_000);
});

describe('npm run worker', () => {
  it('SIGTERM to its process group (a terminal, Ctrl-C-like): the worker drains and npm exits 0', async () => {
    const w = worker(
      { WORKER_SHUTDOWN_GRACE_MS: '30000' },
      { command: ['npm', 'run', '--silent', 'worker'], detached: true },
    );
    const jobIds = await jobsInFlight(w, 'group');
    // The worker gets it from the group and again from npm, which forwards it.
    process.kill(-w.child.pid!, 'SIGTERM');
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(w.output()).toMatch(/worker stopped/);
    for (const jobId of jobIds)
      expect(await ns.client.getResult(jobId)).toMatchObject({ status: 'succeeded' });
  }, 60_000);

  it("SIGTERM to npm's pid only (a supervisor): npm forwards it to the worker, which drains", async () => {
    const w = worker(
      { WORKER_SHUTDOWN_GRACE_MS: '30000' },
      { command: ['npm', 'run', '--silent', 'worker'], detached: true },
    );
    const jobIds = await jobsInFlight(w, 'npmpid');
    w.child.kill('SIGTERM');
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(w.output()).toMatch(/worker stopped/);
    for (const jobId of jobIds)
      expect(await ns.client.getResult(jobId)).toMatchObject({ status: 'succeeded' });
  }, 60_000);
});
