// Where the parts of a fleet configuration meet, through a real worker (FLEET_CONFIG), Redis, MariaDB and the
// scripted model over HTTP: an agent's structured output in the published result, agent_runs, the catalog and
// the batch report; an MCP server's tools listed at start, published in the catalog, called by the model and
// closed with the worker; an agent naming an MCP tool the server lacks stopping the worker at start.
import { observationsIn, turnsIn } from '../../../src/testing/transcript.js';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
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

let server: ScriptedModelServer;
let ns: FleetNamespace;
let tasks: Queue;
let worker: WorkerHandle;
const others: WorkerHandle[] = [];

const assistantTurns = (request: RecordedRequest) => turnsIn(request.messages);

/**
 * The digest agent's model, by region: `north` answers a valid object; `bad` first answers one that fails the
 * schema (a negative total); `loop` only calls its tool and, at the forced final turn, answers without `total`.
 */
function digestModel(request: RecordedRequest): ScriptedReply | undefined {
  const region = /You write the digest of ([^.]+)\./.exec(String(request.messages[0]?.content))?.[1];
  if (!region) return undefined;
  const done = assistantTurns(request);
  if (region.startsWith('loop')) {
    return request.tools === undefined
      ? { output: { region } }
      : { actions: [{ tool: 'region_total', args: { region } }] };
  }
  if (done === 0) return { actions: [{ tool: 'region_total', args: { region } }] };
  if (region.startsWith('bad') && done === 1) return { answer: JSON.stringify({ region, total: -1 }) };
  return { output: { region, total: 1250 } };
}

/** The echoer's model: echo through the MCP server, ask it who runs it, answer with what it said. */
function echoModel(request: RecordedRequest): ScriptedReply | undefined {
  if (!String(request.messages[1]?.content).startsWith('echo through MCP')) return undefined;
  const done = assistantTurns(request);
  if (done === 0) return { actions: [{ tool: 'local_echo', args: { text: 'hello seams' } }] };
  if (done === 1) return { actions: [{ tool: 'local_whoami', args: {} }] };
  return { answer: String(observationsIn(request.messages).at(-1)) };
}

function start(config: string, env: Record<string, string> = {}): WorkerHandle {
  return startWorker(ns, {
    FLEET_CONFIG: join(FIXTURES, config),
    OPENAI_BASE_URL: server.baseURL,
    AGENT_PROTOCOL: 'tools',
    WORKER_LOCK_DURATION_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    METRICS_PORT: '0',
    ...env,
  });
}

beforeAll(async () => {
  server = await startScriptedModel({ rules: [digestModel, echoModel] });
  ns = createNamespace('seams');
  tasks = new Queue(TASKS_QUEUE, { connection: createRedis(REDIS_URL, 'producer'), prefix: ns.prefix });
  worker = start('seams.config.ts');
  await worker.waitForOutput(/worker started/, 40_000);
}, 60_000);

afterAll(async () => {
  await Promise.all([worker, ...others].map(killWorker));
  await tasks.close();
  await ns.cleanup();
  await server.close();
});

/** agent_runs.output of a job: the JSON value, or undefined for SQL NULL (an agent without an output schema). */
const storedOutput = async (jobId: string): Promise<unknown> => {
  const [row] = await queryStore<{ output: string | null }>(
    ns,
    'SELECT CAST(output AS CHAR) AS output FROM agent_runs WHERE job_id = ?',
    [jobId],
  );
  if (!row) throw new Error(`no agent_runs row for job ${jobId}`);
  return row.output === null ? undefined : (JSON.parse(row.output) as unknown);
};

describe('an agent with an output schema, run by a worker', () => {
  it('publishes the validated value as output, and stores it in agent_runs', async () => {
    const { jobId } = await ns.client.enqueue({ agent: 'digest', input: { region: 'north' } });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({
      status: 'succeeded',
      output: { region: 'north', total: 1250 },
      answer: JSON.stringify({ region: 'north', total: 1250 }),
      error: null,
    });
    expect(await storedOutput(jobId)).toEqual({ region: 'north', total: 1250 });
  }, 40_000);

  it('gets the value over the json protocol too', async () => {
    const { jobId } = await ns.client.enqueue({
      agent: 'digest',
      input: { region: 'json-south' },
      protocol: 'json',
    });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ status: 'succeeded', output: { region: 'json-south', total: 1250 } });
    expect(await storedOutput(jobId)).toEqual({ region: 'json-south', total: 1250 });
  }, 40_000);

  it('corrects a reply that fails the schema after one bad reply', async () => {
    const { jobId } = await ns.client.enqueue({ agent: 'digest', input: { region: 'bad-east' } });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ status: 'succeeded', output: { region: 'bad-east', total: 1250 } });
    const mine = server.requests.filter((r) =>
      String(r.messages[0]?.content).includes('digest of bad-east.'),
    );
    expect(mine).toHaveLength(3);
    expect(String(mine[2]!.messages.at(-1)?.content)).toMatch(/not a valid output: total: /);
    expect(mine[2]!.responseFormat).toMatchObject({ type: 'json_schema' });
    expect(await storedOutput(jobId)).toEqual({ region: 'bad-east', total: 1250 });
  }, 40_000);

  it('ends a budget stop without a valid value with output null and the reason in error', async () => {
    const { jobId } = await ns.client.enqueue({
      agent: 'digest',
      input: { region: 'loop-west' },
      budget: { maxSteps: 2 },
    });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({
      status: 'stopped',
      stopReason: 'max_steps',
      output: null,
      error: { code: 'output_missing' },
    });
    expect(result.error?.message).toMatch(/without a valid output/);
    expect(await storedOutput(jobId)).toBeNull();
  }, 40_000);

  it('gives a job that fails at the worker before any run output null', async () => {
    // Past the producers' catalog check: the worker alone catches the bad input.
    const jobId = String(
      (await tasks.add(TASK_JOB_NAME, { agent: 'digest', input: { region: '' } }, TASK_JOB_OPTIONS)).id,
    );
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({
      status: 'failed',
      steps: 0,
      output: null,
      error: { code: 'invalid_task' },
    });
    expect(result.error?.message).toMatch(/input\.region: /);
    expect(await storedOutput(jobId)).toBeNull();
    // A task of the same agent broken in its shape (caught before its agent is looked up) too.
    const shape = String(
      (
        await tasks.add(
          TASK_JOB_NAME,
          { agent: 'digest', input: { region: 'north' }, budget: { maxSteps: -1 } },
          TASK_JOB_OPTIONS,
        )
      ).id,
    );
    expect(await ns.client.waitForResult(shape, { timeoutMs: 20_000 })).toMatchObject({
      status: 'failed',
      output: null,
    });
    expect(await storedOutput(shape)).toBeNull();
    // An agent without an output schema has no output key at all.
    const plain = String(
      (await tasks.add(TASK_JOB_NAME, { agent: 'echoer', input: { x: 1 } }, TASK_JOB_OPTIONS)).id,
    );
    const failed = await ns.client.waitForResult(plain, { timeoutMs: 20_000 });
    expect(failed.status).toBe('failed');
    expect(failed).not.toHaveProperty('output');
    expect(await storedOutput(plain)).toBeUndefined();
  }, 60_000);

  it('shows the outputs of a batch as columns of its report', async () => {
    const { batchId } = await ns.client.enqueueBatch({
      tasks: [
        { agent: 'digest', input: { region: 'north-2' } },
        { agent: 'digest', input: { region: 'loop-2' }, budget: { maxSteps: 2 } },
      ],
    });
    await ns.client.waitForBatch(batchId, { timeoutMs: 40_000 });
    const out = await mkdtemp(join(tmpdir(), 'af-seams-report-'));
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'scripts/report.ts', '--batch', batchId, '--out', out],
        { env: { ...process.env, MYSQL_URL: ns.mysqlUrl } },
      );
      expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(0);
      const markdown = await readFile(join(out, `${batchId}.md`), 'utf8');
      expect(markdown).toMatch(/\| *region *\| *total *\|/);
      expect(markdown).toMatch(/\| *north-2 *\| *1250 *\|/);
      expect(markdown).toMatch(/no output/);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('the catalog of a fleet with an output schema and an MCP server', () => {
  it('lists the output JSON Schema, and the MCP tools with their server schemas', async () => {
    const catalog = await ns.client.getCatalog();
    const digest = catalog?.agents.find((agent) => agent.name === 'digest');
    expect(digest?.output).toEqual({
      type: 'object',
      properties: { region: { type: 'string' }, total: { type: 'number', minimum: 0 } },
      required: ['region', 'total'],
    });
    const echoer = catalog?.agents.find((agent) => agent.name === 'echoer');
    expect(echoer?.output).toBeNull();
    expect(echoer?.tools.map((tool) => [tool.name, tool.readOnly])).toEqual([
      ['local_echo', true],
      ['local_whoami', false],
    ]);
    // The server's schema as the model gets it, not its translation to zod and back.
    expect(echoer?.tools[0]?.description).toBe('Echo a text back.');
    expect(echoer?.tools[0]?.parameters).toEqual({
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
  });
});

describe('an MCP server of the fleet configuration', () => {
  let mcpPid: number;

  it('is listed at start, and its tools are called by the model with the observation in the next request', async () => {
    expect(worker.output()).toMatch(/MCP server connected/);
    const { jobId } = await ns.client.enqueue({ agent: 'echoer', task: 'echo through MCP' });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ status: 'succeeded', toolCalls: 2, error: null });
    const mine = server.requests.filter((r) => String(r.messages[1]?.content).startsWith('echo through MCP'));
    expect(mine).toHaveLength(3);
    expect(mine[0]!.tools?.map((tool) => tool.function.name)).toEqual(['local_echo', 'local_whoami']);
    expect(String(mine[1]!.messages.at(-1)?.content)).toContain('echo: hello seams');
    // The catalog publishes the parameters the model was sent.
    const catalog = await ns.client.getCatalog();
    const published = catalog?.agents.find((agent) => agent.name === 'echoer')?.tools;
    expect(published?.map((tool) => tool.parameters)).toEqual(
      mine[0]!.tools?.map((tool) => tool.function.parameters),
    );
    mcpPid = (JSON.parse(result.answer!) as { pid: number }).pid;
    expect(mcpPid).toBeGreaterThan(0);
  }, 40_000);

  it('is closed when the worker shuts down: no process left behind', async () => {
    expect(isAlive(mcpPid)).toBe(true);
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
    await expect.poll(() => isAlive(mcpPid), { timeout: 10_000 }).toBe(false);
  }, 40_000);

  it('does not outlive a worker killed with SIGKILL (its stdin closes with the worker)', async () => {
    const killed = start('seams.config.ts');
    others.push(killed);
    await killed.waitForOutput(/worker started/, 40_000);
    const { jobId } = await ns.client.enqueue({ agent: 'echoer', task: 'echo through MCP, again' });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    const pid = (JSON.parse(result.answer!) as { pid: number }).pid;
    expect(isAlive(pid)).toBe(true);
    killed.child.kill('SIGKILL');
    await killed.exited;
    await expect.poll(() => isAlive(pid), { timeout: 10_000 }).toBe(false);
  }, 60_000);

  it.each([
    [
      'mcp-unknown-tool.config.ts',
      /^worker: fleet configuration: agent "hopeful" names unknown tool "local_nope"$/m,
    ],
    [
      'mcp-unprefixed-tool.config.ts',
      /^worker: fleet configuration: agent "forgetful" names unknown tool "echo" \(did you mean "local_echo"\? MCP tools are named <server>_<tool>\)$/m,
    ],
  ])(
    '%s: an agent naming a tool the server lacks stops the worker at start with one line',
    async (config, line) => {
      const broken = start(config);
      others.push(broken);
      const exit = await broken.exited;
      expect(exit.code).toBe(1);
      expect(broken.output()).toMatch(line);
      expect(broken.output()).not.toMatch(/worker started/);
    },
    40_000,
  );
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
