// The Bull Board app against the real Redis of REDIS_URL, on an ephemeral port, over queues of a prefix of
// its own (test-board-<random>) that are obliterated at the end.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBoardApp, redactSecrets } from '../producers/board-app.js';
import {
  FLEET_QUEUES,
  RESULT_JOB_NAME,
  RESULTS_QUEUE,
  TASK_JOB_NAME,
  TASKS_QUEUE,
} from '../src/queue/names.js';
import { createRedis } from '../src/queue/redis.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-board-${randomBytes(4).toString('hex')}`;
const USER = 'operator';
const PASSWORD = `pw-${randomBytes(12).toString('hex')}`;

let redis: Redis;
let queues: Queue[];
let server: Server;
let base: string;

function basic(user: string, password: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
}

const AUTH = () => basic(USER, PASSWORD);

function queue(name: string): Queue {
  const found = queues.find((q) => q.name === name);
  if (!found) throw new Error(`no queue ${name}`);
  return found;
}

beforeAll(async () => {
  redis = createRedis(REDIS_URL, 'producer');
  queues = FLEET_QUEUES.map((name) => new Queue(name, { connection: redis, prefix: PREFIX }));
  server = createServer(createBoardApp({ queues, user: USER, password: PASSWORD }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve) && server.closeAllConnections());
  for (const q of queues ?? []) {
    await q.obliterate({ force: true });
    await q.close();
  }
  redis?.disconnect();
});

describe('login', () => {
  it.each([
    ['no credentials', {}],
    ['a wrong password', basic(USER, 'wrong-password')],
    ['a wrong user', basic('admin', PASSWORD)],
    ['no colon', { authorization: `Basic ${Buffer.from(USER + PASSWORD).toString('base64')}` }],
    ['a bearer token', { authorization: `Bearer ${PASSWORD}` }],
  ])('answers 401 with a Basic challenge to %s', async (_label, headers) => {
    for (const path of ['/', '/api/queues', '/static/favicon-32x32.png']) {
      const response = await fetch(`${base}${path}`, { headers });
      expect(response.status, path).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Basic realm="agent-fleet"');
      expect(await response.text()).not.toContain('agent-tasks');
    }
  });

  it('serves the board page with the right credentials', async () => {
    const response = await fetch(`${base}/`, { headers: AUTH() });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/html');
    const html = await response.text();
    expect(html).toMatch(/<html/i);
    expect(html).toContain('agent-fleet');
  });
});

describe('the board API', () => {
  it('lists every queue of the fleet', async () => {
    const response = await fetch(`${base}/api/queues`, { headers: AUTH() });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { queues: { name: string }[] };
    const names = body.queues.map((q) => q.name);
    expect(names).toContain('agent-tasks');
    expect(names).toContain('agent-results');
  });

  it('shows job data, return values and progress with secrets redacted', async () => {
    const tasks = queue(TASKS_QUEUE);
    const job = await tasks.add(TASK_JOB_NAME, {
      task: 'Find the top 3 customers',
      apiKey: 'sk-123',
      budget: { maxTokens: 50_000 },
      nested: { headers: { Authorization: 'Bearer abc' }, list: [{ password: 'hunter2', keep: 'visible' }] },
    });
    await tasks.updateJobProgress(job.id!, { step: 1, totalTokens: 900, sessionToken: 'tok-999' });

    const listed = await fetch(`${base}/api/queues?activeQueue=${TASKS_QUEUE}&status=latest`, {
      headers: AUTH(),
    });
    expect(listed.status).toBe(200);
    const listText = await listed.text();
    expect(listText).not.toContain('sk-123');
    expect(listText).not.toContain('hunter2');
    expect(listText).not.toContain('Bearer abc');
    expect(listText).not.toContain('tok-999');
    const list = JSON.parse(listText) as {
      queues: { name: string; jobs: { id: string; data: unknown }[] }[];
    };
    const shown = list.queues.find((q) => q.name === TASKS_QUEUE)?.jobs.find((j) => j.id === job.id);
    expect(shown?.data).toEqual({
      task: 'Find the top 3 customers',
      apiKey: '[redacted]',
      budget: { maxTokens: 50_000 },
      nested: {
        headers: { Authorization: '[redacted]' },
        list: [{ password: '[redacted]', keep: 'visible' }],
      },
    });

    const one = await fetch(`${base}/api/queues/${TASKS_QUEUE}/${job.id}`, { headers: AUTH() });
    expect(one.status).toBe(200);
    const detail = (await one.json()) as { job: { data: Record<string, unknown>; progress: unknown } };
    expect(detail.job.data['apiKey']).toBe('[redacted]');
    expect(detail.job.progress).toEqual({ step: 1, totalTokens: 900, sessionToken: '[redacted]' });

    // The job itself is untouched: only the board's view is redacted.
    expect((await tasks.getJob(job.id!))?.data.apiKey).toBe('sk-123');
  });

  it('shows the results queue with usage counts intact', async () => {
    const results = queue(RESULTS_QUEUE);
    const usage = { promptTokens: 10, completionTokens: 2, totalTokens: 12, costUsd: 0.0001 };
    const job = await results.add(RESULT_JOB_NAME, {
      jobId: '1',
      status: 'succeeded',
      usage,
      token: 'secret',
    });
    const response = await fetch(`${base}/api/queues/${RESULTS_QUEUE}/${job.id}`, { headers: AUTH() });
    const detail = (await response.json()) as { job: { data: Record<string, unknown> } };
    expect(detail.job.data).toEqual({ jobId: '1', status: 'succeeded', usage, token: '[redacted]' });
  });
});

describe('redactSecrets', () => {
  it('redacts matching keys at any depth, keeps counts and leaves the input alone', () => {
    const input = {
      OPENAI_API_KEY: 'sk-1',
      secretSauce: { recipe: 'x' },
      list: [{ token: 't' }, 'plain'],
      maxTokens: 100,
      apiKey: null,
    };
    expect(redactSecrets(input)).toEqual({
      OPENAI_API_KEY: '[redacted]',
      secretSauce: '[redacted]',
      list: [{ token: '[redacted]' }, 'plain'],
      maxTokens: 100,
      apiKey: null,
    });
    expect(input.OPENAI_API_KEY).toBe('sk-1');
    expect(redactSecrets('sk-plain')).toBe('sk-plain');
    const hostile = redactSecrets(JSON.parse('{"__proto__": {"token": "t"}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(hostile)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(hostile, '__proto__')?.value).toEqual({ token: '[redacted]' });
    expect(redactSecrets(undefined)).toBeUndefined();
  });
});
