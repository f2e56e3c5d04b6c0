// `worker --processes 2` as deployed: real worker processes under the supervisor, real Redis and MariaDB, the
// scripted model over HTTP. 24 tasks run on both children; one killed outright is restarted and every task still
// succeeds; each child serves its own metrics port; SIGTERM to the supervisor, or to npm's whole group, stops
// both gracefully with exit 0 and leaves no process behind, and a third makes them release their running jobs,
// saved; children whose supervisor is killed stop themselves, even when it is killed while they start; a
// configuration error in the children stops the supervisor instead of a restart loop.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { WORKER_NODE_FLAGS } from '../../../src/worker/worker-node-flags.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { sessionLeftovers } from '../../support/process-group.js';
import { stepsModel } from '../../support/steps-model.js';

let server: ScriptedModelServer;
let ns: FleetNamespace;
/** Every supervisor started, killed with its whole group at the end whatever a test left. */
const started: WorkerHandle[] = [];
// Two ports of their own, away from the default span other engineers' workers use.
const METRICS_PORT = 21_000 + Math.floor(Math.random() * 20_000);

beforeAll(async () => {
  server = await startScriptedModel({ rules: [(r) => ({ ...stepsModel(r), latencyMs: 300 })] });
  ns = createNamespace('supervisor');
});

afterAll(async () => {
  await Promise.all(started.map(killWorker));
  await ns.cleanup();
  await server.close();
});

/** The JSON log lines the children printed, with their pid and index. */
function childLines(w: WorkerHandle): { pid: number; processIndex: number; msg: string; jobId?: string }[] {
  return w
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { pid: number; processIndex?: number; msg: string; jobId?: string })
    .filter((line): line is typeof line & { processIndex: number } => line.processIndex !== undefined);
}

function start(...args: Parameters<typeof startWorker>): WorkerHandle {
  const handle = startWorker(...args);
  started.push(handle);
  return handle;
}

const count = (w: WorkerHandle, pattern: RegExp) => (w.output().match(pattern) ?? []).length;

/** The children that logged a line about a job. */
const pidsWithJobs = (w: WorkerHandle) => new Set(childLines(w).flatMap((l) => (l.jobId ? [l.pid] : [])));

async function until(check: () => boolean, what: string, w: WorkerHandle, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms. Output:\n${w.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const ENV = {
  AGENT_PROTOCOL: 'json',
  AGENT_MAX_COST_USD: '1',
  WORKER_CONCURRENCY: '3',
  WORKER_LOCK_DURATION_MS: '2000',
  WORKER_STALLED_INTERVAL_MS: '1000',
  WORKER_SHUTDOWN_GRACE_MS: '20000',
};

/** The supervisor killed outright: both children notice, stop gracefully and leave nothing within `withinMs`. */
async function expectOrphansStop(w: WorkerHandle, withinMs: number): Promise<void> {
  w.child.kill('SIGKILL');
  await w.exited;
  expect(await sessionLeftovers(w.child.pid!, withinMs)).toEqual([]);
  expect(count(w, /the supervisor is gone: stopping/g)).toBe(2);
  expect(count(w, /"msg":"worker stopped"/g)).toBe(2);
}

/** `worker --processes=2` started directly (no npm), in a process group of its own. */
function startSupervised(env: Record<string, string> = {}): WorkerHandle {
  return start(
    ns,
    { ...ENV, OPENAI_BASE_URL: server.baseURL, ...env },
    {
      command: [process.execPath, '--import', 'tsx', 'workers/agent-worker.ts', '--processes=2'],
      detached: true,
    },
  );
}

describe('worker --processes 2', () => {
  it('runs 24 tasks on both children, restarts one killed mid-run, and stops both on SIGTERM', async () => {
    const w = start(
      ns,
      { ...ENV, OPENAI_BASE_URL: server.baseURL, METRICS_PORT: String(METRICS_PORT) },
      {
        command: [
          process.execPath,
          ...WORKER_NODE_FLAGS,
          '--import',
          'tsx',
          'workers/agent-worker.ts',
          '--processes',
          '2',
        ],
        detached: true,
      },
    );
    await until(() => count(w, /"msg":"worker started"/g) === 2, 'two children started', w, 60_000);

    // Each child serves its own port: base + its index.
    for (const port of [METRICS_PORT, METRICS_PORT + 1]) {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(response.status).toBe(200);
      expect(await response.text()).toMatch(/agentfleet_/);
    }

    const jobs = await ns.client.enqueueMany(
      Array.from({ length: 24 }, (_, i) => ({ task: `job s${i}: 4 steps` })),
    );
    // Both children take jobs; then child 1 is killed outright with jobs in flight.
    await until(() => pidsWithJobs(w).size === 2, 'jobs on both children', w);
    const victim = childLines(w).find((l) => l.processIndex === 1 && l.jobId)!.pid;
    process.kill(victim, 'SIGKILL');
    await until(
      () => childLines(w).some((l) => l.processIndex === 1 && l.pid !== victim && l.msg === 'worker started'),
      'child 1 restarted',
      w,
    );
    expect(w.output()).toMatch(/worker process 1 exited \(killed by SIGKILL\): restarting in 1000 ms/);

    for (const { jobId } of jobs)
      expect(await ns.client.waitForResult(jobId, { timeoutMs: 60_000 })).toMatchObject({
        status: 'succeeded',
        steps: 4,
      });
    // The victim's jobs were resumed by a live child once their locks expired: every task still succeeded.
    expect(pidsWithJobs(w).size).toBeGreaterThanOrEqual(2);
    expect(pidsWithJobs(w)).toContain(victim);

    // SIGTERM to the supervisor only: it passes it on, both children drain, and it exits 0.
    w.child.kill('SIGTERM');
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(count(w, /"msg":"worker stopped"/g)).toBe(2);
    expect(w.output()).toMatch(/all worker processes stopped/);
    expect(await sessionLeftovers(w.child.pid!)).toEqual([]);
  }, 180_000);

  it('npm run worker -- --processes 2, signalled the way a terminal does (its whole group): exit 0', async () => {
    const w = start(
      ns,
      { ...ENV, OPENAI_BASE_URL: server.baseURL },
      { command: ['npm', 'run', '--silent', 'worker', '--', '--processes', '2'], detached: true },
    );
    await until(() => count(w, /"msg":"worker started"/g) === 2, 'two children started', w, 60_000);
    // npm, the supervisor and both children get it; npm forwards it again: each stops once, gracefully.
    process.kill(-w.child.pid!, 'SIGTERM');
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(count(w, /"msg":"worker stopped"/g)).toBe(2);
    expect(await sessionLeftovers(w.child.pid!)).toEqual([]);
  }, 90_000);

  it('a supervisor killed outright: its children notice and stop gracefully on their own', async () => {
    const w = startSupervised();
    await until(() => count(w, /"msg":"worker started"/g) === 2, 'two children started', w, 60_000);
    await expectOrphansStop(w, 30_000);
  }, 90_000);

  it('a third signal to the supervisor: each child releases its running jobs, saved, and all exit 0', async () => {
    const w = startSupervised({ AGENT_MAX_STEPS: '100' });
    await until(() => count(w, /"msg":"worker started"/g) === 2, 'two children started', w, 60_000);
    // 90 steps at 300 ms: half a minute a job, longer than the grace a stop would wait for them.
    await ns.client.enqueueMany(Array.from({ length: 6 }, (_, i) => ({ task: `job h${i}: 90 steps` })));
    await until(() => pidsWithJobs(w).size === 2, 'jobs on both children', w);
    const signalled = Date.now();
    for (let i = 0; i < 3; i++) {
      w.child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalled).toBeLessThan(15_000);
    expect(count(w, /asked again: checkpointing and releasing running jobs/g)).toBe(2);
    expect(count(w, /"msg":"worker stopped"/g)).toBe(2);
    expect(w.output()).not.toMatch(/SIGKILL|killing them/);
    expect(await sessionLeftovers(w.child.pid!)).toEqual([]);
  }, 120_000);

  it('a configuration only the children can check (FLEET_CONFIG) stops the supervisor with exit 1', async () => {
    const w = startSupervised({ FLEET_CONFIG: '/nonexistent/fleet.config.ts' });
    expect(await w.exited).toEqual({ code: 1, signal: null });
    expect(
      count(w, /worker: FLEET_CONFIG: no file at \/nonexistent\/fleet.config.ts/g),
    ).toBeGreaterThanOrEqual(1);
    expect(w.output()).toMatch(/stopped on a configuration error/);
    expect(w.output()).not.toMatch(/restarting in/);
    expect(await sessionLeftovers(w.child.pid!)).toEqual([]);
  }, 60_000);

  it('a dependency that is down when children start (Redis) restarts them; the supervisor stays', async () => {
    // Nothing listens on port 1: each child gives up on Redis after its ping's deadline, retryably.
    const w = startSupervised({ REDIS_URL: 'redis://127.0.0.1:1' });
    await until(
      () => count(w, /worker process \d exited \(exit code 1\): restarting in/g) >= 2,
      'restarts',
      w,
    );
    expect(w.output()).toMatch(/Cannot reach Redis at REDIS_URL=redis:\/\/127\.0\.0\.1:1/);
    expect(w.output()).not.toMatch(/stopped on a configuration error/);
    w.child.kill('SIGTERM');
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(await sessionLeftovers(w.child.pid!)).toEqual([]);
  }, 60_000);

  it('a supervisor killed while its children start: they stop on their own once started', async () => {
    const w = startSupervised();
    // Forked, still loading: their channel to the supervisor closes before they could listen on it.
    await until(() => /supervising 2 worker processes/.test(w.output()), 'children forked', w, 60_000);
    expect(count(w, /"msg":"worker started"/g)).toBe(0);
    await expectOrphansStop(w, 60_000);
  }, 120_000);
});
