// A fleet configuration of the team's own: a custom agent with an input schema, templated instructions and its
// own tools, run end to end by real worker processes (FLEET_CONFIG), the scripted model over HTTP; the tasks
// that do not fit it refused with the field path; broken configurations stopping the worker at start; and a
// side effect made once through ctx.once even when the worker is killed between the effect and its record.
import { observationsIn, turnsIn } from '../../../src/testing/transcript.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASK_JOB_OPTIONS } from '../../../src/queue/job-options.js';
import { TASK_JOB_NAME, TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import type { RecordedRequest, ScriptedReply } from '../../../src/testing/scripted-model-server.js';
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
import { FIXTURES_DIR } from '../../support/repo-paths.js';

const FIXTURES = join(FIXTURES_DIR, 'fleets');
const effectsDirectory = mkdtempSync(join(tmpdir(), 'af-agents-'));
const effectsFile = join(effectsDirectory, 'effects.log');

let server: ScriptedModelServer;
let ns: FleetNamespace;
let tasks: Queue;
const workers: WorkerHandle[] = [];

/** The weather agent's model: the forecast of the input's city, one notification, then the answer. */
function weatherModel(request: RecordedRequest): ScriptedReply | undefined {
  const system = String(request.messages[0]?.content ?? '');
  const city = /City: ([^.]+)\./.exec(system)?.[1];
  if (!city) return undefined;
  const done = turnsIn(request.messages);
  if (done === 0) return { actions: [{ tool: 'get_forecast', args: { city } }] };
  if (done === 1) return { actions: [{ tool: 'notify_team', args: { message: `weather in ${city}` } }] };
  return { answer: `the team knows the weather in ${city}` };
}

function worker(env: Record<string, string> = {}): WorkerHandle {
  const handle = startWorker(ns, {
    FLEET_CONFIG: join(FIXTURES, 'weather.config.ts'),
    OPENAI_BASE_URL: server.baseURL,
    AGENT_PROTOCOL: 'tools',
    EFFECTS_FILE: effectsFile,
    WORKER_LOCK_DURATION_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    METRICS_PORT: '0',
    ...env,
  });
  workers.push(handle);
  return handle;
}

const effects = (): string[] => {
  try {
    return readFileSync(effectsFile, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

beforeAll(async () => {
  server = await startScriptedModel({ rules: [weatherModel] });
  ns = createNamespace('agents');
  tasks = new Queue(TASKS_QUEUE, { connection: createRedis(REDIS_URL, 'producer'), prefix: ns.prefix });
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await tasks.close();
  await ns.cleanup();
  rmSync(effectsDirectory, { recursive: true, force: true });
  await server.close();
});

describe('a custom agent of a fleet configuration', () => {
  it('runs a task given as input, with its instructions templated from the input and its own tools', async () => {
    const w = worker();
    await w.waitForOutput(/worker started/);
    expect(w.output()).toMatch(/fleet configuration ready/);
    const { jobId } = await ns.client.enqueue({ agent: 'weather', input: { city: 'Lyon', days: 3 } });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({
      status: 'succeeded',
      answer: 'the team knows the weather in Lyon',
      toolCalls: 2,
      error: null,
    });
    const requests = server.requests.filter((r) => String(r.messages[0]?.content).includes('City: Lyon.'));
    expect(requests).toHaveLength(3);
    // The agent's instructions, then the protocol's own prompt; the input is the task the model reads.
    expect(requests[0]!.messages[0]!.content).toMatch(
      /^You are the weather desk\. City: Lyon\. Horizon: 3 days\./,
    );
    expect(requests[0]!.messages[1]!.content).toBe('Input: {"city":"Lyon","days":3}');
    expect(requests[0]!.tools?.map((t) => t.function.name)).toEqual(['get_forecast', 'notify_team']);
    expect(String(requests[1]!.messages.at(-1)?.content)).toContain('forecast for Lyon: sunny');
    expect(effects().filter((line) => line.startsWith(`${jobId}:`))).toHaveLength(1);
    const [run] = await queryStore<{ task: string; agent: string }>(
      ns,
      'SELECT task, agent FROM agent_runs WHERE job_id = ?',
      [jobId],
    );
    expect(run?.task).toBe('Input: {"city":"Lyon","days":3}');
    // Recorded with its agent: the console filters and the batch forecast read runs by agent.
    expect(run?.agent).toBe('weather');
  }, 40_000);

  it('keeps the json protocol working: the instructions come before its prompt, which lists the tools', async () => {
    const w = worker();
    await w.waitForOutput(/worker started/);
    const { jobId } = await ns.client.enqueue({
      agent: 'weather',
      input: { city: 'Turku', days: 2 },
      protocol: 'json',
    });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'the team knows the weather in Turku' });
    const first = server.requests.find((r) => String(r.messages[0]?.content).includes('City: Turku.'));
    expect(first?.tools).toBeUndefined();
    expect(String(first?.messages[0]?.content)).toMatch(
      /^You are the weather desk\. City: Turku\. Horizon: 2 days\.\n\nYou complete the task by calling tools\. Tools:\n- get_forecast\(city: string\)/,
    );
  }, 40_000);

  it.each([
    [
      'an input that fails the schema',
      { agent: 'weather', input: { city: '', days: 9 } },
      /input\.city: .*input\.days: /,
    ],
    [
      'a missing input',
      { agent: 'weather', task: 'the weather please' },
      /input: required by agent "weather"/,
    ],
    [
      'an unknown agent',
      { agent: 'astrologer', task: 'stars' },
      /agent: this fleet has no agent "astrologer"/,
    ],
    ['a task for the absent default agent', { task: 'hello' }, /agent: this fleet has no agent "default"/],
    [
      'a tool the agent does not have',
      { agent: 'weather', input: { city: 'Oslo', days: 1 }, tools: ['sql_query'] },
      /tools\.0: agent "weather" has no tool "sql_query"/,
    ],
    [
      'a budget above the ceiling',
      { agent: 'weather', input: { city: 'Oslo', days: 1 }, budget: { maxSteps: 7 } },
      /budget\.maxSteps: must be at most 6/,
    ],
    [
      'a cost budget above the ceiling',
      { agent: 'weather', input: { city: 'Oslo', days: 1 }, budget: { maxCostUsd: 0.75 } },
      /budget\.maxCostUsd: must be at most 0\.5/,
    ],
  ])(
    'fails %s as invalid, naming the field, without retrying',
    async (_label, task, message) => {
      const w = worker();
      await w.waitForOutput(/worker started/);
      const before = server.requests.length;
      // Past the producers' own check (they refuse these once a catalog is published): a producer that read no
      // catalog, or an older one, which the worker must not trust.
      const jobId = String((await tasks.add(TASK_JOB_NAME, task, TASK_JOB_OPTIONS)).id);
      const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
      expect(result).toMatchObject({
        status: 'failed',
        steps: 0,
        error: { kind: 'input', code: 'invalid_task', retryable: false },
      });
      expect(result.error?.message).toMatch(message);
      await expect.poll(async () => (await ns.client.getTask(jobId)).state).toBe('failed');
      expect(server.requests.length).toBe(before);
    },
    40_000,
  );

  it('runs a task within the ceiling with the budget it asks for', async () => {
    const w = worker();
    await w.waitForOutput(/worker started/);
    const { jobId } = await ns.client.enqueue({
      agent: 'weather',
      input: { city: 'Porto', days: 2 },
      budget: { maxSteps: 6 },
    });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result.status).toBe('succeeded');
    const status = await ns.client.getTask(jobId);
    expect(status.progress).toMatchObject({ maxSteps: 6 });
  }, 40_000);
});

describe('startWorker({ fleet })', () => {
  it('serves a fleet built in code', async () => {
    // Only this worker may take the job: the others serve another fleet.
    await Promise.all(workers.splice(0).map(killWorker));
    const handle = startWorker(
      ns,
      {
        OPENAI_BASE_URL: server.baseURL,
        AGENT_PROTOCOL: 'tools',
        METRICS_PORT: '0',
        // As every worker of the file: BullMQ runs one stalled-job check per interval, fleet wide.
        WORKER_LOCK_DURATION_MS: '2000',
        WORKER_STALLED_INTERVAL_MS: '1000',
      },
      { command: [process.execPath, '--import', 'tsx', join(FIXTURES, '..', 'start-worker.ts')] },
    );
    workers.push(handle);
    await handle.waitForOutput(/worker started/);
    server.reset({
      rules: [
        (request) => {
          if (!String(request.messages[0]?.content).startsWith('You shout.\n\n')) return undefined;
          const shouted = observationsIn(request.messages)[0];
          return shouted !== undefined
            ? { answer: shouted }
            : { actions: [{ tool: 'shout', args: { text: 'hi' } }] };
        },
        weatherModel,
      ],
    });
    const { jobId } = await ns.client.enqueue({ agent: 'shouter', task: 'say hi loudly' });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'HI', toolCalls: 1 });
  }, 40_000);
});

describe('a broken fleet configuration', () => {
  it.each([
    [
      'unknown-tool.config.ts',
      /^worker: fleet configuration: agent "lost" names unknown tool "no_such_tool"$/m,
    ],
    [
      'bad-schema.config.ts',
      /^worker: fleet configuration: agent "odd" input: cannot become JSON Schema \(Date cannot be represented in JSON Schema\)$/m,
    ],
    ['missing.config.ts', /^worker: FLEET_CONFIG: no file at .*missing\.config\.ts$/m],
  ])(
    '%s stops the worker at start with one line, exit 1',
    async (file, line) => {
      const w = worker({ FLEET_CONFIG: join(FIXTURES, file) });
      const exit = await w.exited;
      expect(exit.code).toBe(1);
      expect(w.output()).toMatch(line);
      expect(w.output()).not.toMatch(/worker started/);
    },
    30_000,
  );
});

describe('ctx.once', () => {
  it('makes an effect once when the worker is killed between the effect and its record', async () => {
    // Only the hanging worker may take the job.
    await Promise.all(workers.splice(0).map(killWorker));
    writeFileSync(effectsFile, '');
    const hanging = worker({ HANG_AFTER_EFFECT: '1' });
    await hanging.waitForOutput(/worker started/);
    const { jobId } = await ns.client.enqueue({ agent: 'weather', input: { city: 'Bergen', days: 1 } });
    await expect.poll(() => effects().length, { timeout: 20_000 }).toBe(1);
    hanging.child.kill('SIGKILL');
    await hanging.exited;
    const [pending] = await queryStore<{ status: string }>(
      ns,
      'SELECT status FROM effect_ledger WHERE job_id = ?',
      [jobId],
    );
    expect(pending?.status).toBe('pending');

    const next = worker();
    await next.waitForOutput(/worker started/);
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
    // An answer whose effect's outcome is unknown is no success (docs/side-effects.md): failed, answer kept.
    expect(result).toMatchObject({
      status: 'failed',
      answer: 'the team knows the weather in Bergen',
      error: { code: 'uncertain_effects', retryable: false },
    });
    // Resumed from the write-ahead checkpoint: the same call, found pending in the ledger, not run again.
    expect(effects()).toHaveLength(1);
    expect(result.uncertainEffects).toEqual([
      expect.objectContaining({
        tool: 'notify_team',
        why: 'an earlier attempt stopped between the effect and its record',
      }),
    ]);
  }, 60_000);

  it("settles the effect with the tool's lookup when the worker is killed between the effect and its record", async () => {
    await Promise.all(workers.splice(0).map(killWorker));
    writeFileSync(effectsFile, '');
    const hanging = worker({ HANG_AFTER_EFFECT: '1' });
    await hanging.waitForOutput(/worker started/);
    const { jobId } = await ns.client.enqueue({ agent: 'weather', input: { city: 'Oslo', days: 1 } });
    await expect.poll(() => effects().length, { timeout: 20_000 }).toBe(1);
    hanging.child.kill('SIGKILL');
    await hanging.exited;

    // The resumed call finds the row pending, waits out the grace, and asks the lookup: it happened.
    const next = worker({ LOOKUP_EFFECTS: '1', NOTIFY_GRACE_MS: '1000' });
    await next.waitForOutput(/worker started/);
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'the team knows the weather in Oslo' });
    expect(result.uncertainEffects).toBeUndefined();
    expect(effects()).toHaveLength(1);
    const [row] = await queryStore<{ status: string; result: string }>(
      ns,
      'SELECT status, result FROM effect_ledger WHERE job_id = ?',
      [jobId],
    );
    expect(row).toMatchObject({ status: 'done', result: '"notified: weather in Oslo"' });
  }, 60_000);

  it("the worker's sweeper settles a custom tool's effects nobody resumes, with the tool's lookup", async () => {
    await Promise.all(workers.splice(0).map(killWorker));
    writeFileSync(effectsFile, 'gone-1:2:0 weather in Rome\n');
    // Jobs that will never resume: one effect made and not recorded, one made nowhere, one never started.
    const insert = (key: string, started: boolean) =>
      queryStore(
        ns,
        `INSERT INTO effect_ledger (effect_key, job_id, tool, status, ref, started_at, updated_at)
         VALUES (?, 'gone-1', 'notify_team', 'pending', ?, IF(?, NOW(3), NULL), NOW(3) - INTERVAL 10 MINUTE)`,
        [key, key, started],
      );
    await insert('gone-1:2:0', true);
    await insert('gone-1:2:1', true);
    await insert('gone-1:2:2', false);
    const sweeping = worker({
      LOOKUP_EFFECTS: '1',
      NOTIFY_GRACE_MS: '1000',
      EFFECT_SWEEP_INTERVAL_MS: '500',
    });
    const statuses = async () =>
      Object.fromEntries(
        (
          await queryStore<{ effect_key: string; status: string }>(
            ns,
            "SELECT effect_key, status FROM effect_ledger WHERE job_id = 'gone-1'",
            [],
          )
        ).map((r) => [r.effect_key, r.status]),
      );
    await expect
      .poll(statuses, { timeout: 20_000 })
      .toEqual({ 'gone-1:2:0': 'done', 'gone-1:2:1': 'failed', 'gone-1:2:2': 'failed' });
    await sweeping.waitForOutput(/effect sweep: it happened, recorded as done/);
    expect(effects()).toHaveLength(1); // the sweeper never makes an effect
  }, 60_000);
});
