// The HTTP producer API against the real Redis of REDIS_URL, on an ephemeral port, under a queue prefix of
// its own (test-api-<random>) that is obliterated at the end. No worker: jobs stay waiting.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Queue } from 'bullmq';
import type { Express } from 'express';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FleetClient, TaskValidationError } from '../../../src/client/fleet-client.js';
import { createApiServer } from '../../../producers/http-api.js';
import { RESULT_JOB_NAME, resultJobId, RESULTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { FleetMetrics } from '../../../src/metrics/fleet-metrics.js';
import { accepts, externalIPv4, startHttpProcess } from '../../support/http-process.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-api-${randomBytes(4).toString('hex')}`;
const TOKEN = `test-token-${randomBytes(16).toString('hex')}`;

const logLines: string[] = [];
const logger = pino(
  { level: 'info' },
  new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      callback();
    },
  }),
);

let redis: Redis;
let tasks: Queue;
let results: Queue;
let client: FleetClient;
const servers: Server[] = [];

async function listen(app: Express): Promise<string> {
  const server = createServer(app);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let base: string;

function post(body: string | object, headers: Record<string, string> = {}, url = base): Promise<Response> {
  return fetch(`${url}/v1/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function get(path: string, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) {
  return fetch(`${base}${path}`, { headers });
}

async function jobCount(): Promise<number> {
  const counts = await tasks.getJobCounts();
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
}

beforeAll(async () => {
  redis = createRedis(REDIS_URL, 'producer');
  tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: PREFIX });
  results = new Queue(RESULTS_QUEUE, { connection: redis, prefix: PREFIX });
  client = new FleetClient({ redisUrl: REDIS_URL, prefix: PREFIX });
  base = await listen(createApiServer({ client, token: TOKEN, logger }));
});

afterAll(async () => {
  await Promise.all(
    servers.map((server) => new Promise((resolve) => server.close(resolve) && server.closeAllConnections())),
  );
  await client?.close();
  await tasks?.obliterate({ force: true });
  await results?.obliterate({ force: true });
  await tasks?.close();
  await results?.close();
  // Batches leave a parent queue and ledger keys under the prefix too.
  await deleteKeysWithPrefix(redis, PREFIX);
  redis?.disconnect();
});

describe('authentication', () => {
  it.each([
    ['no Authorization header', {}],
    ['a wrong token of the same length', { authorization: `Bearer ${'x'.repeat(TOKEN.length)}` }],
    ['a wrong, shorter token', { authorization: 'Bearer nope' }],
    ['the token with another scheme', { authorization: `Basic ${TOKEN}` }],
    ['an empty bearer', { authorization: 'Bearer ' }],
  ])('answers 401 to %s and enqueues nothing', async (_label, headers) => {
    const before = await jobCount();
    const response = await fetch(`${base}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ task: 'Find the top 3 customers' }),
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: 'unauthorized' });
    expect(await jobCount()).toBe(before);
    expect(await jobCount()).toBe(0);
  });

  it('refuses before reading the body: an oversized unauthenticated body is 401, not 413', async () => {
    const response = await fetch(`${base}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task: 'x'.repeat(100_000) }),
    });
    expect(response.status).toBe(401);
    expect(await jobCount()).toBe(0);
  });

  it('guards GET /v1/tasks/:jobId too', async () => {
    const response = await get('/v1/tasks/1', {});
    expect(response.status).toBe(401);
  });

  it('lets /healthz through without a token when Redis answers', async () => {
    const response = await fetch(`${base}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });
});

describe('POST /v1/tasks', () => {
  it('enqueues a valid task with its validated data and answers 202 {jobId}', async () => {
    const response = await post({
      task: '  Find the top 3 customers by Q1 2024 sales  ',
      budget: { maxSteps: 6, maxCostUsd: 0.02 },
      tools: ['sql_query', 'list_tables'],
      metadata: { batch: 'nightly', n: 3 },
      tenant: 'acme',
    });
    expect(response.status).toBe(202);
    const body = (await response.json()) as { jobId: string };
    expect(Object.keys(body)).toEqual(['jobId']);
    expect(typeof body.jobId).toBe('string');

    const job = await tasks.getJob(body.jobId);
    // Named after its agent and first words, so a list of jobs tells them apart.
    expect(job?.name).toBe('default: Find the top 3 customers by Q1 2024…');
    // The schema trims the task: the queue holds the validated task, not the raw body.
    expect(job?.data).toEqual({
      task: 'Find the top 3 customers by Q1 2024 sales',
      budget: { maxSteps: 6, maxCostUsd: 0.02 },
      tools: ['sql_query', 'list_tables'],
      metadata: { batch: 'nightly', n: 3 },
      tenant: 'acme',
    });
  });

  it.each([
    ['a missing task', {}, 'task'],
    ['an empty task', { task: '' }, 'task'],
    ['a blank task', { task: '   ' }, 'task'],
    ['an 8,001-character task', { task: 'x'.repeat(8_001) }, 'task'],
    ['a task that is not a string', { task: 42 }, 'task'],
    ['an unknown field', { task: 't', priority: 'high' }, 'priority'],
    ['an unknown budget field', { task: 't', budget: { maxSeconds: 3 } }, 'budget.maxSeconds'],
    ['an unknown tool', { task: 't', tools: ['sql_query', 'rm_rf'] }, 'tools.1'],
    ['maxSteps 0', { task: 't', budget: { maxSteps: 0 } }, 'budget.maxSteps'],
    ['maxSteps 1000', { task: 't', budget: { maxSteps: 1000 } }, 'budget.maxSteps'],
    ['a negative cost', { task: 't', budget: { maxCostUsd: -0.01 } }, 'budget.maxCostUsd'],
    ['a tenant with a space', { task: 't', tenant: 'acme corp' }, 'tenant'],
    ['a JSON array', [{ task: 't' }], ''],
  ])('refuses %s with 400 and the field path, enqueuing nothing', async (_label, body, path) => {
    const before = await jobCount();
    const response = await post(body);
    expect(response.status).toBe(400);
    const answer = (await response.json()) as { error: string; issues: { path: string; message: string }[] };
    expect(answer.error).toBe('invalid_task');
    expect(answer.issues.map((issue) => issue.path)).toContain(path);
    for (const issue of answer.issues) expect(typeof issue.message).toBe('string');
    expect(await jobCount()).toBe(before);
  });

  it('answers 413 to a body over 64 KB', async () => {
    const before = await jobCount();
    const response = await post({
      task: 't',
      metadata: { blob: 'x'.repeat(1_000) },
      pad: 'x'.repeat(66_000),
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: 'payload_too_large' });
    expect(await jobCount()).toBe(before);
  });

  it('answers 415 to a body that is not JSON', async () => {
    const text = await post('task=hello', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(await text.json()).toMatchObject({ error: 'unsupported_media_type' });
    const form = await post('task=hello', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(415);
  });

  it('answers 400 to malformed JSON, without a stack trace', async () => {
    const response = await post('{"task": "unterminated');
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ error: 'invalid_json', message: 'the body is not a JSON object' });
    expect(text).not.toMatch(/SyntaxError|at .*\.js|node_modules/);
  });

  it('gives the same jobId to the same idempotency key', async () => {
    const key = `api-test-${randomBytes(4).toString('hex')}`;
    const first = await post({ task: 'once', idempotencyKey: key });
    const second = await post({ task: 'once', idempotencyKey: key });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    const a = (await first.json()) as { jobId: string };
    const b = (await second.json()) as { jobId: string };
    expect(b.jobId).toBe(a.jobId);
    const waiting = await tasks.getJobs(['waiting']);
    expect(waiting.filter((job) => job.id === a.jobId)).toHaveLength(1);
  });
});

describe('GET /v1/tasks/:jobId', () => {
  it('answers 404 for an unknown job', async () => {
    const response = await get('/v1/tasks/no-such-job');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: 'not_found' });
  });

  it('answers state waiting, its progress and a null result for a waiting job', async () => {
    const created = (await (await post({ task: 'wait for a worker' })).json()) as { jobId: string };
    const response = await get(`/v1/tasks/${created.jobId}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['progress', 'result', 'state']);
    expect(body['state']).toBe('waiting');
    expect(body['result']).toBeNull();
  });

  it('answers the published result once there is one', async () => {
    const created = (await (await post({ task: 'done' })).json()) as { jobId: string };
    const result = {
      jobId: created.jobId,
      status: 'succeeded',
      stopReason: 'answer',
      answer: '42',
      steps: 1,
      toolCalls: 0,
      usage: { promptTokens: 10, completionTokens: 2, totalTokens: 12, costUsd: 0.0001 },
      error: null,
    };
    await results.add(RESULT_JOB_NAME, result, { jobId: resultJobId(created.jobId) });
    const body = (await (await get(`/v1/tasks/${created.jobId}`)).json()) as Record<string, unknown>;
    expect(body['result']).toEqual(result);
  });
});

describe('everything else', () => {
  it('answers 404 JSON to an unknown route', async () => {
    const response = await get('/v2/anything');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: 'not_found' });
  });

  it('answers 500 without leaking the error when the client throws', async () => {
    const broken = {
      enqueue: () => Promise.reject(new Error('secret internals at /srv/app.js:1')),
    } as unknown as FleetClient;
    const url = await listen(createApiServer({ client: broken, token: TOKEN, logger }));
    const response = await post({ task: 't' }, {}, url);
    expect(response.status).toBe(500);
    expect(await response.text()).toBe('{"error":"internal"}');
  });

  it('answers 503 to the health check and to a POST when Redis is unreachable', async () => {
    // BullMQ prints each connection error of a queue without an 'error' listener; the client's have none.
    const quiet = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const down = new FleetClient({ redisUrl: 'redis://127.0.0.1:1', prefix: PREFIX });
    try {
      const url = await listen(createApiServer({ client: down, token: TOKEN, logger }));
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(503);
      expect(await health.json()).toEqual({ status: 'unavailable' });
      const response = await post({ task: 't' }, {}, url);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({ error: 'unavailable' });
    } finally {
      await down.close();
      quiet.mockRestore();
    }
  });

  it('logs one line per request with method, path, status and ms, never the token', async () => {
    logLines.length = 0;
    await get('/v1/tasks/no-such-job');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const entries = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const entry = entries.find((e) => e['path'] === '/v1/tasks/no-such-job');
    expect(entry).toMatchObject({ method: 'GET', path: '/v1/tasks/no-such-job', status: 404 });
    expect(typeof entry?.['ms']).toBe('number');
    expect(entries.filter((e) => e['path'] === '/v1/tasks/no-such-job')).toHaveLength(1);
    expect(logLines.join('\n')).not.toContain(TOKEN);
  });
});

describe('batches', () => {
  const postBatch = (body: object, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
    fetch(`${base}/v1/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it('POST /v1/batches enqueues every task under one batch id; GET shows it running', async () => {
    const before = await jobCount();
    const response = await postBatch({
      tasks: [{ task: 'one' }, { task: 'two', metadata: { report: 'r2' } }],
      budget: { maxCostUsd: 0.25 },
    });
    expect(response.status).toBe(202);
    const { batchId, jobIds } = (await response.json()) as { batchId: string; jobIds: string[] };
    expect(jobIds).toEqual([`${batchId}-1`, `${batchId}-2`]);
    expect((await jobCount()) - before).toBe(2);
    const job = await tasks.getJob(jobIds[1]!);
    expect(job?.data).toMatchObject({ task: 'two', metadata: { report: 'r2', batch: batchId } });
    const status = await get(`/v1/batches/${batchId}`);
    expect(status.status).toBe(200);
    expect(await status.json()).toMatchObject({
      state: 'running',
      summary: { batchId, tasks: 2, succeeded: 0, stopped: 0, failed: 0 },
    });
  });

  it('a bad task refuses the whole batch with the paths, and enqueues nothing', async () => {
    const before = await jobCount();
    const response = await postBatch({
      tasks: [{ task: 'fine' }, { task: '', tools: ['rm'] }],
      budget: { maxTokens: 5 },
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: string; issues: { path: string }[] };
    expect(body.error).toBe('invalid_batch');
    expect(body.issues.map((i) => i.path)).toEqual(
      expect.arrayContaining(['tasks.1.task', 'tasks.1.tools.0', 'budget.maxTokens']),
    );
    expect(await jobCount()).toBe(before);
  });

  it('refuses without a token and answers 404 for an unknown batch', async () => {
    expect((await postBatch({ tasks: [{ task: 'x' }] }, {})).status).toBe(401);
    expect((await get('/v1/batches/no-such-batch')).status).toBe(404);
  });
});

describe('security headers', () => {
  it('every answer carries them, and Cache-Control: no-store', async () => {
    const answers = [
      await fetch(`${base}/healthz`),
      await get('/v1/tasks/no-such-job'),
      await get('/v1/tasks/1', {}),
      await post({ task: 'headers' }),
      await post('{not json'),
      await get('/nowhere'),
    ];
    for (const response of answers) {
      const what = `${response.url} ${response.status}`;
      expect(response.headers.get('cache-control'), what).toBe('no-store');
      expect(response.headers.get('content-security-policy'), what).toContain("default-src 'none'");
      expect(response.headers.get('content-security-policy'), what).toContain("frame-ancestors 'none'");
      expect(response.headers.get('x-content-type-options'), what).toBe('nosniff');
      expect(response.headers.get('x-frame-options'), what).toBe('DENY');
      expect(response.headers.get('referrer-policy'), what).toBe('no-referrer');
      await response.arrayBuffer();
    }
  });
});

describe('GET /metrics', () => {
  it('asks for the token', async () => {
    const metrics = new FleetMetrics({ defaultMetrics: false });
    const url = await listen(createApiServer({ client, token: TOKEN, logger, metrics }));
    for (const headers of [{}, { authorization: 'Bearer wrong-token' }] as Record<string, string>[]) {
      const refused = await fetch(`${url}/metrics`, { headers });
      expect(refused.status).toBe(401);
      expect(await refused.text()).not.toContain('agentfleet_');
    }
    const scraped = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toContain('text/plain');
    expect(await scraped.text()).toContain('agentfleet_');
  });
});

describe('refusals of hostile tasks and bodies, with nothing enqueued', () => {
  it('refuses a task of invisible characters only, naming `task`', async () => {
    for (const task of [
      '\u200B',
      '\u2060\u2060',
      '\u180E',
      '\u0085',
      '\u0000',
      '\u200B \u2060\uFEFF\u0085\u0000',
    ]) {
      const before = await jobCount();
      const response = await post({ task });
      expect(response.status, JSON.stringify(task)).toBe(400);
      const body = (await response.json()) as { issues: { path: string; message: string }[] };
      expect(body.issues).toEqual([{ path: 'task', message: 'must contain at least one visible character' }]);
      expect(await jobCount()).toBe(before);
    }
    expect((await post({ task: '\u200Bvisible\u2060' })).status).toBe(202);
    const before = await jobCount();
    const batch = await fetch(`${base}/v1/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: [{ task: 'fine' }, { task: '\u2060\u0000' }] }),
    });
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as { issues: unknown[] }).issues).toEqual([
      { path: 'tasks.1.task', message: 'must contain at least one visible character' },
    ]);
    expect(await jobCount()).toBe(before);
  });

  it('refuses a lone task naming an existing batch in metadata.batch; a batch-like label of none is kept', async () => {
    const batch = await fetch(`${base}/v1/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: [{ task: 'member' }], budget: { maxCostUsd: 1 } }),
    });
    const { batchId } = (await batch.json()) as { batchId: string };
    const before = await jobCount();
    const response = await post({ task: 'join it', metadata: { batch: batchId } });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { issues: { path: string; message: string }[] };
    expect(body.issues.map((issue) => issue.path)).toEqual(['metadata.batch']);
    expect(body.issues[0]!.message).toContain('batch API');
    expect(await jobCount()).toBe(before);
    // CONTRACT §3's example task: its batch does not exist, so it is only a label.
    const example = await post({
      task: 'Find the top 3 customers by Q1 2024 sales and email each a thank-you note',
      metadata: { batch: 'nightly-2026-11-30', report: 'q1-top-customers' },
    });
    expect(example.status).toBe(202);
  });

  it('refuses a task body over the key, object and depth limits before validating it', async () => {
    const cases: [string, string][] = [
      ['keys and array items', `{"task":"x","tools":[${Array(20_000).fill('0').join(',')}]}`],
      [
        'an object of more than 100 keys',
        `{"task":"x","metadata":{${Array.from({ length: 150 }, (_, i) => `"k${i}":1`).join(',')}}}`,
      ],
      ['deeper than 32 levels', `{"task":"x","metadata":${'['.repeat(40)}${']'.repeat(40)}}`],
    ];
    for (const [what, body] of cases) {
      const before = await jobCount();
      const response = await post(body);
      expect(response.status, what).toBe(400);
      const answer = (await response.json()) as { error: string; message: string };
      expect(answer.error, what).toBe('too_complex');
      expect(answer.message, what).toContain(what);
      expect(await jobCount()).toBe(before);
    }
  });

  it('refuses an 8 MB batch of 700,000 keys on its shape, not after validating every key', async () => {
    const keys = Array.from({ length: 700_000 }, (_, i) => `"k${i}":1`).join(',');
    for (const body of [
      `{"tasks":[{"task":"x","metadata":{${keys}}}]}`,
      `{"tasks":[{"task":"x"}],${keys}}`,
    ]) {
      expect(body.length).toBeGreaterThan(8_000_000);
      const before = await jobCount();
      const response = await fetch(`${base}/v1/batches`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body,
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        error: 'too_complex',
        message: 'the body has an object of more than 100 keys',
      });
      expect(await jobCount()).toBe(before);
    }
  });
});

describe('where the API listens', () => {
  it('on API_HOST, 127.0.0.1 by default, and the log line says so', async () => {
    const env = { API_TOKEN: TOKEN, API_PORT: '0', REDIS_URL, QUEUE_PREFIX: PREFIX };
    const local = await startHttpProcess('producers/api.ts', env, /API listening/);
    try {
      const { host, port, msg } = local.listening;
      expect(host).toBe('127.0.0.1');
      expect(msg).toBe(`API listening on http://127.0.0.1:${port}`);
      expect(await accepts('127.0.0.1', port)).toBe(true);
      const external = externalIPv4();
      if (external) expect(await accepts(external, port)).toBe(false);
    } finally {
      expect(await local.stop()).toBe(0);
    }
    const everywhere = await startHttpProcess(
      'producers/api.ts',
      { ...env, API_HOST: '0.0.0.0' },
      /API listening/,
    );
    try {
      const { host, port, msg } = everywhere.listening;
      expect(host).toBe('0.0.0.0');
      expect(msg).toBe(`API listening on http://0.0.0.0:${port}`);
      const external = externalIPv4();
      if (external) expect(await accepts(external, port)).toBe(true);
    } finally {
      expect(await everywhere.stop()).toBe(0);
    }
  }, 60_000);
});

describe('the library refuses the same, with the field path and nothing enqueued', () => {
  async function refusal(input: unknown): Promise<TaskValidationError> {
    const before = await jobCount();
    const error = await client.enqueue(input).then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(await jobCount()).toBe(before);
    expect(error).toBeInstanceOf(TaskValidationError);
    return error as TaskValidationError;
  }

  it('an invisible task, a lone task naming an existing batch, hostile values', async () => {
    expect((await refusal({ task: '\u200B\u2060' })).issues.map((i) => i.path)).toEqual(['task']);

    const { batchId } = await client.enqueueBatch({ tasks: [{ task: 'member' }] });
    const joined = await refusal({ task: 'join', metadata: { batch: batchId } });
    expect(joined.issues.map((i) => i.path)).toEqual(['metadata.batch']);
    expect(joined.message).toContain('metadata.batch: names the existing batch');
    const many = await client
      .enqueueMany([{ task: 'a' }, { task: 'b', metadata: { batch: batchId } }])
      .catch((e: unknown) => e);
    expect(many).toBeInstanceOf(TaskValidationError);
    expect((many as Error).message).toMatch(/^Invalid task #2: metadata\.batch/);

    const getter = await refusal({
      task: 'x',
      get model(): string {
        throw new Error('boom');
      },
    });
    expect(getter.issues).toEqual([{ path: 'model', message: 'cannot be read: boom' }]);
    const trap = () => {
      throw new Error('trapped');
    };
    expect((await refusal(new Proxy({}, { ownKeys: trap }))).issues).toEqual([
      { path: '', message: 'cannot be read: trapped' },
    ]);
    const before = await jobCount();
    const hostileBatch = await client
      .enqueueBatch({
        tasks: [
          {
            task: 'x',
            get budget(): unknown {
              throw new Error('batch getter');
            },
          },
        ],
      })
      .catch((thrown: unknown) => thrown);
    expect(hostileBatch).toBeInstanceOf(TaskValidationError);
    expect((hostileBatch as TaskValidationError).issues).toEqual([
      { path: 'tasks.0.budget', message: 'cannot be read: batch getter' },
    ]);
    expect(await jobCount()).toBe(before);
    const wide = Object.fromEntries(Array.from({ length: 700 }, (_, i) => [`k${i}`, 1]));
    expect((await refusal({ task: 'x', metadata: wide })).issues).toEqual([
      { path: 'metadata', message: 'has an object of more than 100 keys' },
    ]);
  });
});
