// The Bull Board app against the real Redis of REDIS_URL, on an ephemeral port, over queues of a prefix of
// its own (test-board-<random>) that are obliterated at the end.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBoardApp, redactSecrets, type BoardAppOptions } from '../../../producers/board-app.js';
import {
  FLEET_QUEUES,
  RESULT_JOB_NAME,
  RESULTS_QUEUE,
  TASK_JOB_NAME,
  TASKS_QUEUE,
} from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { accepts, externalIPv4, startHttpProcess } from '../../support/http-process.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-board-${randomBytes(4).toString('hex')}`;
const USER = 'operator';
const PASSWORD = `pw-${randomBytes(12).toString('hex')}`;
const ADMIN_USER = 'root-operator';
const ADMIN_PASSWORD = `admin-${randomBytes(12).toString('hex')}`;

let redis: Redis;
let queues: Queue[];
let server: Server;
let base: string;
const servers: Server[] = [];

/** Another board over the same queues, on a port of its own. */
async function listenBoard(options: Omit<BoardAppOptions, 'queues'>): Promise<string> {
  const extra = createServer(createBoardApp({ queues, ...options }));
  servers.push(extra);
  await new Promise<void>((resolve) => extra.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(extra.address() as AddressInfo).port}`;
}

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
  for (const open of [server, ...servers]) {
    await new Promise((resolve) => open?.close(resolve) && open.closeAllConnections());
  }
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

describe('security headers and the page under its CSP', () => {
  it('sends them on the page, the board API, static assets and a 401', async () => {
    for (const [path, headers] of [
      ['/', AUTH()],
      ['/api/queues', AUTH()],
      ['/static/favicon-32x32.png', AUTH()],
      ['/', {}],
    ] as const) {
      const response = await fetch(`${base}${path}`, { headers });
      await response.arrayBuffer();
      const csp = response.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toContain("script-src 'self'");
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(response.headers.get('x-frame-options'), path).toBe('DENY');
      expect(response.headers.get('referrer-policy'), path).toBe('no-referrer');
    }
  });

  it('serves every script and stylesheet the page names, and runs no inline script', async () => {
    const html = await (await fetch(`${base}/`, { headers: AUTH() })).text();
    // script-src 'self': the page's only inline <script> is its JSON configuration, which is not run.
    const inline = [...html.matchAll(/<script(?![^>]*\bsrc=)([^>]*)>/g)].map((match) => match[1]);
    expect(inline).toEqual([' id="__UI_CONFIG__" type="application/json"']);
    const assets = [...html.matchAll(/(?:src|href)="(static\/[^"]+\.(?:js|css))"/g)].map(
      (match) => match[1]!,
    );
    expect(assets.some((asset) => asset.endsWith('.js'))).toBe(true);
    expect(assets.some((asset) => asset.endsWith('.css'))).toBe(true);
    for (const asset of assets) {
      const response = await fetch(`${base}/${asset}`, { headers: AUTH() });
      expect(response.status, asset).toBe(200);
      expect(response.headers.get('content-type'), asset).toMatch(
        asset.endsWith('.js') ? /javascript/ : /text\/css/,
      );
      expect((await response.arrayBuffer()).byteLength, asset).toBeGreaterThan(100);
    }
  });
});

/** Every job of every state in the queue, by id. */
async function jobIds(name: string): Promise<string[]> {
  const jobs = await queue(name).getJobs();
  return jobs.map((job) => String(job.id)).sort();
}

/** The data of the task jobs not in `before`, which the caller then removes. */
async function newTaskJobs(before: readonly string[]) {
  const jobs = (await queue(TASKS_QUEUE).getJobs()).filter((job) => !before.includes(String(job.id)));
  return {
    data: jobs.map((job) => job.data as unknown),
    remove: () => Promise.all(jobs.map((job) => job.remove())),
  };
}

function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
  extra: Record<string, string> = {},
): Promise<Response> {
  return fetch(url, {
    method,
    headers: {
      ...headers,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...extra,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('the read-only login', () => {
  it('cannot add, edit, retry, promote, clean, pause, empty or obliterate anything', async () => {
    const tasks = queue(TASKS_QUEUE);
    const job = await tasks.add(TASK_JOB_NAME, { task: 'keep me' });
    const before = await jobIds(TASKS_QUEUE);
    const q = `${base}/api/queues/${TASKS_QUEUE}`;
    const attempts: [string, string, unknown?][] = [
      ['POST', `${q}/add`, { name: TASK_JOB_NAME, data: { task: 'forged' } }],
      ['PUT', `${q}/retry/failed`],
      ['PUT', `${q}/promote`],
      ['PUT', `${q}/clean/waiting`],
      ['PUT', `${q}/clean/completed`],
      ['PUT', `${q}/pause`],
      ['PUT', `${q}/empty`],
      ['PUT', `${q}/obliterate`],
      ['PUT', `${q}/concurrency`, { concurrency: 1 }],
      ['PUT', `${base}/api/queues/pause`],
      ['PUT', `${q}/${job.id}/retry`],
      ['PUT', `${q}/${job.id}/clean`],
      ['PUT', `${q}/${job.id}/promote`],
      ['PATCH', `${q}/${job.id}/update-data`, { data: { task: 'edited' } }],
      ['PATCH', `${q}/${job.id}/priority`, { priority: 5 }],
      ['POST', `${base}/api/metrics/history/purge`, {}],
    ];
    for (const [method, url, body] of attempts) {
      const response = await send(url, method, AUTH(), body);
      expect(response.status, `${method} ${url}`).toBe(405);
      await response.arrayBuffer();
    }
    expect(await jobIds(TASKS_QUEUE)).toEqual(before);
    expect((await tasks.getJob(job.id!))?.data).toEqual({ task: 'keep me' });
    expect(await tasks.isPaused()).toBe(false);
    await job.remove();
  });

  it('has no admin board when no admin login is configured', async () => {
    const before = await jobIds(TASKS_QUEUE);
    const response = await send(`${base}/admin/api/queues/${TASKS_QUEUE}/add`, 'POST', AUTH(), {
      name: TASK_JOB_NAME,
      data: { task: 'forged' },
    });
    expect(response.status).toBe(405);
    expect(await jobIds(TASKS_QUEUE)).toEqual(before);
  });
});

describe('the admin login', () => {
  let adminBase: string;
  const ADMIN = () => basic(ADMIN_USER, ADMIN_PASSWORD);

  beforeAll(async () => {
    adminBase = await listenBoard({
      user: USER,
      password: PASSWORD,
      admin: { user: ADMIN_USER, password: ADMIN_PASSWORD },
    });
  });

  it('adds, pauses, resumes and cleans under /admin/, its page under its own base path', async () => {
    const page = await fetch(`${adminBase}/admin/`, { headers: ADMIN() });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<base href="/admin/"');

    const q = `${adminBase}/admin/api/queues/${TASKS_QUEUE}`;
    const added = await send(`${q}/add`, 'POST', ADMIN(), {
      name: TASK_JOB_NAME,
      data: { task: 'by admin' },
    });
    expect(added.status).toBe(200);
    const { job } = (await added.json()) as { job: { id: string } };
    expect((await queue(TASKS_QUEUE).getJob(job.id))?.data).toEqual({ task: 'by admin' });

    expect((await send(`${q}/pause`, 'PUT', ADMIN())).status).toBe(200);
    expect(await queue(TASKS_QUEUE).isPaused()).toBe(true);
    expect((await send(`${q}/resume`, 'PUT', ADMIN())).status).toBe(200);
    expect(await queue(TASKS_QUEUE).isPaused()).toBe(false);

    const cleaned = await send(`${q}/${job.id}/clean`, 'PUT', ADMIN());
    expect(cleaned.status).toBe(204);
    expect(await queue(TASKS_QUEUE).getJob(job.id)).toBeUndefined();
  });

  it('is the only login of /admin/; on / it is read-only like the other', async () => {
    const before = await jobIds(TASKS_QUEUE);
    const q = `/api/queues/${TASKS_QUEUE}`;
    const viewer = await send(`${adminBase}/admin${q}/add`, 'POST', AUTH(), { name: 'x', data: {} });
    expect(viewer.status).toBe(401);
    expect(viewer.headers.get('www-authenticate')).toBe('Basic realm="agent-fleet-admin"');
    const readOnly = await send(`${adminBase}${q}/add`, 'POST', ADMIN(), { name: 'x', data: {} });
    expect(readOnly.status).toBe(405);
    expect((await fetch(`${adminBase}/api/queues`, { headers: ADMIN() })).status).toBe(200);
    expect(await jobIds(TASKS_QUEUE)).toEqual(before);
  });

  it('refuses a cross-site form POST (text/plain) with the cached credentials, and creates no job', async () => {
    const before = await jobIds(TASKS_QUEUE);
    const forged = `{"name":"${TASK_JOB_NAME}","data":{"task":"csrf"},"x":"=x"}`;
    const add = `${adminBase}/admin/api/queues/${TASKS_QUEUE}/add`;
    const crossSite = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };
    const refusals: [Record<string, string>, number][] = [
      [{ 'content-type': 'text/plain', ...crossSite }, 403],
      [{ 'content-type': 'application/json', ...crossSite }, 403],
      [{ 'content-type': 'application/json', origin: 'https://evil.example' }, 403],
      [{ 'content-type': 'application/json', 'sec-fetch-site': 'same-site' }, 403],
      [{ 'content-type': 'application/json', origin: 'null' }, 403],
      // Same origin but not JSON: what a form on the board's own origin could send.
      [{ 'content-type': 'text/plain', origin: adminBase, 'sec-fetch-site': 'same-origin' }, 415],
      [{ 'content-type': 'application/x-www-form-urlencoded' }, 415],
      [{ 'content-type': 'multipart/form-data; boundary=x' }, 415],
    ];
    for (const [headers, status] of refusals) {
      const response = await fetch(add, {
        method: 'POST',
        headers: { ...ADMIN(), ...headers },
        body: forged,
      });
      expect(response.status, JSON.stringify(headers)).toBe(status);
      await response.arrayBuffer();
    }
    // A bodiless cross-site PUT (a retry, a pause) is refused on its Origin alone.
    const pause = await fetch(`${adminBase}/admin/api/queues/${TASKS_QUEUE}/pause`, {
      method: 'PUT',
      headers: { ...ADMIN(), ...crossSite },
    });
    expect(pause.status).toBe(403);
    expect(await jobIds(TASKS_QUEUE)).toEqual(before);
    expect(await queue(TASKS_QUEUE).isPaused()).toBe(false);

    // What the board's own page sends: its origin, same-origin, JSON.
    const own = await fetch(add, {
      method: 'POST',
      headers: {
        ...ADMIN(),
        'content-type': 'application/json',
        origin: adminBase,
        'sec-fetch-site': 'same-origin',
      },
      body: JSON.stringify({ name: TASK_JOB_NAME, data: { task: 'from the page' } }),
    });
    expect(own.status).toBe(200);
    const added = await newTaskJobs(before);
    expect(added.data).toEqual([{ task: 'from the page' }]);
    await added.remove();
  });

  it('takes BOARD_ORIGIN as the only own origin when it is set', async () => {
    const before = await jobIds(TASKS_QUEUE);
    const proxied = await listenBoard({
      user: USER,
      password: PASSWORD,
      admin: { user: ADMIN_USER, password: ADMIN_PASSWORD },
      origin: 'https://board.example.com',
    });
    const add = `${proxied}/admin/api/queues/${TASKS_QUEUE}/add`;
    const body = JSON.stringify({ name: TASK_JOB_NAME, data: { task: 'via proxy' } });
    const headers = { ...ADMIN(), 'content-type': 'application/json' };
    const direct = await fetch(add, { method: 'POST', headers: { ...headers, origin: proxied }, body });
    expect(direct.status).toBe(403);
    const viaProxy = await fetch(add, {
      method: 'POST',
      headers: { ...headers, origin: 'https://board.example.com' },
      body,
    });
    expect(viaProxy.status).toBe(200);
    const added = await newTaskJobs(before);
    expect(added.data).toEqual([{ task: 'via proxy' }]);
    await added.remove();
  });
});

describe('npm run board', () => {
  const env = {
    BOARD_USER: USER,
    BOARD_PASSWORD: PASSWORD,
    BOARD_PORT: '0',
    REDIS_URL,
    QUEUE_PREFIX: PREFIX,
  };

  it('listens on BOARD_HOST, 127.0.0.1 by default, where its log line says; the admin board only when configured', async () => {
    const board = await startHttpProcess('producers/board.ts', env, /board listening/);
    try {
      const { host, port, msg } = board.listening;
      expect(host).toBe('127.0.0.1');
      expect(msg).toBe(`board listening on http://127.0.0.1:${port}/ (read-only)`);
      expect(await accepts('127.0.0.1', port)).toBe(true);
      const external = externalIPv4();
      if (external) expect(await accepts(external, port)).toBe(false);
    } finally {
      expect(await board.stop()).toBe(0);
    }
    const admin = {
      BOARD_ADMIN_USER: ADMIN_USER,
      BOARD_ADMIN_PASSWORD: ADMIN_PASSWORD,
      BOARD_HOST: '0.0.0.0',
    };
    const open = await startHttpProcess('producers/board.ts', { ...env, ...admin }, /board listening/);
    try {
      const { host, port, msg } = open.listening;
      expect(host).toBe('0.0.0.0');
      expect(msg).toBe(
        `board listening on http://0.0.0.0:${port}/ (read-only; admin board on http://0.0.0.0:${port}/admin/)`,
      );
      const page = await fetch(`http://127.0.0.1:${port}/admin/`, {
        headers: basic(ADMIN_USER, ADMIN_PASSWORD),
      });
      expect(page.status).toBe(200);
      await page.arrayBuffer();
    } finally {
      expect(await open.stop()).toBe(0);
    }
  }, 60_000);

  it('refuses to start with half an admin login', async () => {
    await expect(
      startHttpProcess('producers/board.ts', { ...env, BOARD_ADMIN_USER: ADMIN_USER }, /board listening/),
    ).rejects.toThrow(/BOARD_ADMIN_PASSWORD not set/);
  }, 30_000);
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
