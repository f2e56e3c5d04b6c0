// The ways to cancel besides FleetClient.cancelTask, against a real worker (Redis, MariaDB, the scripted model over
// HTTP): POST /v1/tasks/:jobId/cancel behind named tokens (401 without one, 202 recording the token's name as who
// cancelled, 409 with the result once finished, 404 for an unknown task) and the CLI's `--cancel ID [--wait]`.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, expect, it } from 'vitest';
import { createApiServer } from '../../../producers/http-api.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { turnsIn } from '../../../src/testing/transcript.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { REPO_ROOT } from '../../support/repo-paths.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const OPS = `ops-${randomBytes(16).toString('hex')}`;
const silent = pino({ level: 'silent' }, new Writable({ write: (_chunk, _encoding, done) => done() }));

let model: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;
let server: Server;
let base = '';

const taskOf = (request: RecordedRequest) => String(request.messages[1]?.content ?? '');

/** `hold <name>`: a note, then an answer the model holds for a minute. `quick <name>`: a note, then the answer. */
function holdModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  if (!/^(hold|quick) /.test(task)) return undefined;
  if (turnsIn(request.messages) === 0) return { actions: [{ tool: 'note', args: { text: task } }] };
  return { answer: `${task} done`, ...(task.startsWith('hold') ? { latencyMs: 60_000 } : {}) };
}

async function held(task: string): Promise<string> {
  const { jobId } = await ns.client.enqueue({ agent: 'worker', task });
  const deadline = Date.now() + 30_000;
  while (model.requests.filter((r) => taskOf(r) === task).length < 2) {
    if (Date.now() > deadline) throw new Error(`${task}: its second call never came`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return jobId;
}

const cancel = (jobId: string, token: string | null = OPS) =>
  fetch(`${base}/v1/tasks/${jobId}/cancel`, {
    method: 'POST',
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'producers/cli.ts', ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, QUEUE_PREFIX: ns.prefix, REDIS_URL, MYSQL_URL: ns.mysqlUrl, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

setupOrFail(async () => {
  ns = createNamespace('cancel-cmd');
  model = await startScriptedModel({ rules: [holdModel] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/cancel.config.ts',
    WORKER_CONCURRENCY: '2',
  });
  server = createServer(
    createApiServer({ client: ns.client, tokens: [{ name: 'ops', token: OPS }], logger: silent }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await model?.close();
});

it('the route: 401 cancels nothing; 202 records the token’s name; then 409 with the result; 404', async () => {
  const jobId = await held('hold api');
  for (const token of [null, 'wrong']) {
    const refused = await cancel(jobId, token);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 'unauthorized' });
  }
  expect((await ns.client.getTask(jobId)).state).toBe('active');

  const accepted = await cancel(jobId);
  expect(accepted.status).toBe(202);
  expect(await accepted.json()).toEqual({ jobId, state: 'active', cancelling: true, children: 0 });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 10_000 });
  expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled', steps: 1 });
  expect(result.stopDetail).toMatch(/^cancelled by ops at /);

  const late = await cancel(jobId);
  expect(late.status).toBe(409);
  // Its result goes out just before BullMQ completes its job: the state may still say active.
  expect(await late.json()).toMatchObject({
    error: 'already_finished',
    state: expect.stringMatching(/^(active|completed)$/),
    result: { status: 'stopped', stopReason: 'cancelled' },
  });
  for (const unknown of ['no-such-job', 'x'.repeat(300)]) {
    const missing = await cancel(unknown);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'not_found' });
  }
}, 60_000);

it('the CLI: --cancel ID --wait prints the cancel, then the cancelled result; a finished or unknown task', async () => {
  const jobId = await held('hold cli');
  const run = await cli(['--cancel', jobId, '--wait', '--timeout', '20']);
  expect(run.code, run.stderr).toBe(0);
  const [first, last] = run.stdout.trim().split('\n');
  expect(JSON.parse(first!)).toEqual({ jobId, outcome: 'cancelling', state: 'active', children: 0 });
  const result = JSON.parse(last!) as { status: string; stopReason: string; stopDetail: string };
  expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled' });
  expect(result.stopDetail).toMatch(/^cancelled by shell:/);

  const again = await cli(['--cancel', jobId]);
  expect(again.code).toBe(1);
  expect(again.stderr).toMatch(/has finished \(its result is out\): nothing cancelled/);
  const unknown = await cli(['--cancel', 'no-such-job']);
  expect(unknown.code).toBe(2);
  expect(JSON.parse(unknown.stdout)).toEqual({ jobId: 'no-such-job', outcome: 'unknown' });
}, 90_000);
