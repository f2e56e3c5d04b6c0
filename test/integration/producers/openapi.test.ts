// The OpenAPI document against the API it describes: the committed docs/openapi.json is the generated one (run
// `npm run openapi` when this fails), its schemas are valid JSON Schema, and real answers of every route (a real
// worker runs the tasks against the scripted model; real Redis and MariaDB) are checked with ajv against what the
// document says for their path, method and status. Also the Idempotency-Key header of POST /v1/tasks.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import type { Express } from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { StoreResultArchive } from '../../../producers/result-archive.js';
import { forecastDefaultsOf } from '../../../src/batch/forecast.js';
import { parseEnv } from '../../../config/env.js';
import { createApiServer } from '../../../producers/http-api.js';
import { buildOpenApiDocument } from '../../../producers/openapi.js';
import { FleetMetrics } from '../../../src/metrics/fleet-metrics.js';
import type { RecordedRequest, ScriptedReply } from '../../../src/testing/scripted-model-server.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { observationsIn } from '../../../src/testing/transcript.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { FIXTURES_DIR, REPO_ROOT } from '../../support/repo-paths.js';
import { openApprovals } from '../../support/approvals-harness.js';
import { parkJob } from '../../support/parked-jobs.js';
import { StoreNotes } from '../../../producers/store-notes.js';
import { MysqlNoteStore } from '../../../src/notes/notes-store.js';
import { createStorePool } from '../../../src/store/pool.js';

type Json = Record<string, unknown>;
interface Operation {
  responses: Record<string, { content?: Record<string, { schema: Json }> }>;
}

const TOKEN = 'openapi-test-token';
const document = buildOpenApiDocument() as { paths: Record<string, Record<string, Operation>> } & Json;
const silent = pino({ level: 'silent' }, new Writable({ write: (_chunk, _encoding, done) => done() }));

const ajv = new Ajv2020({ strict: false, allErrors: true });
(formats as unknown as (ajv: Ajv2020) => void)(ajv);
ajv.addSchema(document, 'openapi.json');

const pointer = (...parts: string[]) =>
  parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/** The operations the answers below exercised, as `get /v1/tasks/{jobId} 200`. */
const exercised = new Set<string>();

/** Checks an answer against what the document says for its route and status, and returns its body. */
async function checked(response: Response, method: string, route: string): Promise<unknown> {
  const status = String(response.status);
  const operation = document.paths[route]?.[method];
  expect(operation, `${method} ${route} is not in the document`).toBeDefined();
  const documented = operation!.responses[status];
  expect(documented, `${method} ${route} answered ${status}, which the document does not list`).toBeDefined();
  if (status === '204') {
    // No content: none documented, none sent.
    expect(documented!.content, `${method} ${route} 204 documents a body`).toBeUndefined();
    expect(await response.text()).toBe('');
    exercised.add(`${method} ${route} ${status}`);
    return undefined;
  }
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!;
  const media = documented!.content?.[type];
  expect(
    media,
    `${method} ${route} ${status} answered ${type}, which the document does not list`,
  ).toBeDefined();
  const body: unknown = type === 'application/json' ? await response.json() : await response.text();
  const at = pointer('paths', route, method, 'responses', status, 'content', type, 'schema');
  const validate = ajv.getSchema(`openapi.json#/${at}`)!;
  expect(
    validate(body),
    `${method} ${route} ${status}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
  ).toBe(true);
  exercised.add(`${method} ${route} ${status}`);
  return body;
}

let server: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;
let base = '';
const servers: Server[] = [];
const clients: FleetClient[] = [];

async function listen(app: Express): Promise<string> {
  const http = createServer(app);
  servers.push(http);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
}

const auth = { authorization: `Bearer ${TOKEN}` };
const post = (path: string, body: unknown, headers: Record<string, string> = {}, url = base) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const get = (path: string, headers: Record<string, string> = auth, url = base) =>
  fetch(`${url}${path}`, { headers });

function greeterModel(request: RecordedRequest): ScriptedReply | undefined {
  const name = /Greet ([^.]+)\./.exec(String(request.messages[0]?.content ?? ''))?.[1];
  if (!name) return undefined;
  // What the run was told its call returned, as a tool message or as a fact (docs/memory.md).
  const [seen] = observationsIn(request.messages);
  if (seen === undefined) return { actions: [{ tool: 'shout', args: { text: name } }] };
  return { output: { greeting: `HELLO ${seen.trim()}` } };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

beforeAll(async () => {
  server = await startScriptedModel({ rules: [greeterModel] });
  ns = createNamespace('openapi');
  worker = startWorker(ns, {
    FLEET_CONFIG: join(FIXTURES_DIR, 'fleets', 'openapi.config.ts'),
    OPENAI_BASE_URL: server.baseURL,
    METRICS_PORT: '0',
  });
  base = await listen(
    createApiServer({ client: ns.client, token: TOKEN, logger: silent, metrics: new FleetMetrics() }),
  );
  await worker.waitForOutput(/"msg":"worker started"/, 60_000);
}, 90_000);

afterAll(async () => {
  await killWorker(worker);
  await Promise.all(servers.map((http) => new Promise((resolve) => http.close(resolve))));
  await Promise.all(clients.map((client) => client.close()));
  await ns.cleanup();
  await server.close();
});

describe('the document', () => {
  it('is committed as generated: docs/openapi.json is stale otherwise (npm run openapi)', () => {
    const committed = JSON.parse(readFileSync(join(REPO_ROOT, 'docs', 'openapi.json'), 'utf8'));
    expect(committed).toEqual(JSON.parse(JSON.stringify(document)));
  });

  it('is OpenAPI 3.1 whose schemas are valid JSON Schema 2020-12 and whose references all resolve', () => {
    expect(document['openapi']).toBe('3.1.0');
    const schemas = (document['components'] as { schemas: Record<string, Json> }).schemas;
    for (const [name, schema] of Object.entries(schemas)) {
      expect(ajv.validateSchema(schema), `${name}: ${ajv.errorsText(ajv.errors)}`).toBe(true);
    }
    const refs = JSON.stringify(document).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of new Set(refs)) {
      const name = /#\/components\/schemas\/([^"]+)"/.exec(ref)?.[1];
      expect(name && schemas[name], ref).toBeTruthy();
    }
    const ids = Object.values(document.paths).flatMap((methods) =>
      Object.values(methods).map((operation) => (operation as unknown as Json)['operationId']),
    );
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('real answers of every route, checked against the document', () => {
  it('tasks: enqueued with an Idempotency-Key header, the same key again, refusals, and the result', async () => {
    const task = { agent: 'greeter', input: { name: 'Ada' } };
    const first = (await checked(
      await post('/v1/tasks', task, { 'Idempotency-Key': 'greet-ada' }),
      'post',
      '/v1/tasks',
    )) as { jobId: string };
    // The header means what the body's field means: the same key names the same job, however it is given.
    const again = await checked(
      await post('/v1/tasks', { ...task, idempotencyKey: 'greet-ada' }),
      'post',
      '/v1/tasks',
    );
    expect(again).toEqual(first);
    const both = await checked(
      await post('/v1/tasks', { ...task, idempotencyKey: 'greet-ada' }, { 'Idempotency-Key': 'greet-ada' }),
      'post',
      '/v1/tasks',
    );
    expect(both).toEqual(first);

    const differing = await post(
      '/v1/tasks',
      { ...task, idempotencyKey: 'other' },
      { 'Idempotency-Key': 'greet-ada' },
    );
    expect(differing.status).toBe(400);
    expect(await checked(differing, 'post', '/v1/tasks')).toEqual({
      error: 'invalid_task',
      issues: [
        { path: 'idempotencyKey', message: expect.stringMatching(/differs from the Idempotency-Key header/) },
      ],
    });
    const badHeader = await post('/v1/tasks', task, { 'Idempotency-Key': 'no spaces allowed' });
    expect(await checked(badHeader, 'post', '/v1/tasks')).toMatchObject({
      error: 'invalid_task',
      issues: [{ path: 'Idempotency-Key', message: expect.stringMatching(/^header: letters, digits/) }],
    });
    expect(await checked(await post('/v1/tasks', { task: '' }), 'post', '/v1/tasks')).toMatchObject({
      error: 'invalid_task',
    });
    expect(await checked(await post('/v1/tasks', '{"task":'), 'post', '/v1/tasks')).toMatchObject({
      error: 'invalid_json',
    });
    expect(
      await checked(await post('/v1/tasks', task, { authorization: 'Bearer wrong' }), 'post', '/v1/tasks'),
    ).toEqual({ error: 'unauthorized' });
    await checked(await post('/v1/tasks', 'text', { 'content-type': 'text/plain' }), 'post', '/v1/tasks');
    await checked(await post('/v1/tasks', { task: 'x'.repeat(70_000) }), 'post', '/v1/tasks');

    const route = '/v1/tasks/{jobId}';
    await checked(await get(`/v1/tasks/${first.jobId}`), 'get', route);
    const done = await until(
      async () => (await get(`/v1/tasks/${first.jobId}`)).json() as Promise<{ result: unknown }>,
      (status) => status.result !== null,
    );
    expect(done.result).toMatchObject({ status: 'succeeded', output: { greeting: 'HELLO ADA' } });
    const finished = await checked(await get(`/v1/tasks/${first.jobId}`), 'get', route);
    expect(finished).toMatchObject({ state: 'completed' });
    await checked(await get('/v1/tasks/no-such-job'), 'get', route);
    await checked(await get(`/v1/tasks/${first.jobId}`, {}), 'get', route);
    const cancel = '/v1/tasks/{jobId}/cancel';
    const late = await checked(await post(`/v1/tasks/${first.jobId}/cancel`, {}), 'post', cancel);
    expect(late).toMatchObject({
      error: 'already_finished',
      state: 'completed',
      result: { status: 'succeeded' },
    });
    await checked(await post('/v1/tasks/no-such-job/cancel', {}), 'post', cancel);
    await checked(
      await post(`/v1/tasks/${first.jobId}/cancel`, {}, { authorization: 'Bearer no' }),
      'post',
      cancel,
    );
  }, 60_000);

  it('batches: enqueued, refused (a bad task, an Idempotency-Key header), running and completed', async () => {
    const batch = {
      tasks: [
        { agent: 'greeter', input: { name: 'Bo' } },
        { agent: 'greeter', input: { name: 'Cy' } },
      ],
    };
    const enqueued = (await checked(await post('/v1/batches', batch), 'post', '/v1/batches')) as {
      batchId: string;
    };
    const refused = await checked(
      await post('/v1/batches', { tasks: [{ task: 'ok' }, { task: '' }] }),
      'post',
      '/v1/batches',
    );
    expect(refused).toMatchObject({ error: 'invalid_batch', issues: [{ path: 'tasks.1.task' }] });
    const keyed = await checked(
      await post('/v1/batches', batch, { 'Idempotency-Key': 'b-1' }),
      'post',
      '/v1/batches',
    );
    expect(keyed).toMatchObject({ error: 'invalid_batch', issues: [{ path: 'Idempotency-Key' }] });

    const route = '/v1/batches/{batchId}';
    await checked(await get(`/v1/batches/${enqueued.batchId}`), 'get', route);
    await until(
      async () => (await get(`/v1/batches/${enqueued.batchId}`)).json() as Promise<{ state: string }>,
      (status) => status.state === 'completed',
    );
    const completed = await checked(await get(`/v1/batches/${enqueued.batchId}`), 'get', route);
    expect(completed).toMatchObject({ state: 'completed', summary: { tasks: 2, succeeded: 2 } });
    await checked(await get('/v1/batches/no-such-batch'), 'get', route);

    // ?dryRun=true: the forecast (from the runs just recorded), nothing enqueued; a bad value names dryRun.
    const forecasting = new FleetClient({
      redisUrl: REDIS_URL,
      prefix: ns.prefix,
      forecast: { history: new StoreResultArchive(ns.mysqlUrl), defaults: forecastDefaultsOf(parseEnv({})) },
    });
    clients.push(forecasting);
    const forecastBase = await listen(createApiServer({ client: forecasting, token: TOKEN, logger: silent }));
    const dry = await checked(
      await post('/v1/batches?dryRun=true', batch, {}, forecastBase),
      'post',
      '/v1/batches',
    );
    expect(dry).toMatchObject({ dryRun: true, forecast: { tasks: [{}, {}] } });
    const bad = await checked(
      await post('/v1/batches?dryRun=maybe', batch, {}, forecastBase),
      'post',
      '/v1/batches',
    );
    expect(bad).toMatchObject({ issues: [{ path: 'dryRun' }] });
  }, 60_000);

  it('approvals: listed, read, decided, refused, decided twice, batch-wide; a parked task', async () => {
    // The worker migrated the store; jobs are parked as a worker parks them (test/support/parked-jobs.ts).
    const approvals = await openApprovals(ns);
    try {
      const url = await listen(
        createApiServer({ client: ns.client, token: TOKEN, logger: silent, approvals: approvals.desk }),
      );
      // A third call stays pending, so the job is never woken for the worker to run.
      const calls = [{}, {}, { tool: 'post_invoice' }];
      const parked = await parkJob(approvals.tasks, approvals.store, calls, 'openapi-batch');
      const [first, second] = parked.approvals.map((approval) => approval.id);
      const list = '/v1/approvals';
      await checked(await get(`${list}?jobId=${parked.jobId}&state=pending`, auth, url), 'get', list);
      await checked(await get(`${list}?state=waiting`, auth, url), 'get', list);
      const one = '/v1/approvals/{approvalId}';
      await checked(await get(`${list}/${first}`, auth, url), 'get', one);
      await checked(await get(`${list}/apr_missing`, auth, url), 'get', one);
      await checked(await post(`${list}/${first}`, { decision: 'approve', by: 'x' }, {}, url), 'post', one);
      await checked(await post(`${list}/${first}`, { decision: 'approve' }, {}, url), 'post', one);
      await checked(await post(`${list}/${first}`, { decision: 'approve' }, {}, url), 'post', one);
      await checked(await post(`${list}/apr_missing`, { decision: 'approve' }, {}, url), 'post', one);
      const batch = '/v1/batches/{batchId}/approvals';
      await checked(
        await post('/v1/batches/openapi-batch/approvals', { decision: 'approve' }, {}, url),
        'post',
        batch,
      );
      await checked(await get(`/v1/tasks/${parked.jobId}`, auth, url), 'get', '/v1/tasks/{jobId}');
      const decided = await checked(
        await post(
          '/v1/batches/openapi-batch/approvals',
          { tool: 'send_email', decision: 'approve' },
          {},
          url,
        ),
        'post',
        batch,
      );
      expect(decided).toMatchObject({ decided: [{ id: second }], conflicts: 0 });
      // Its third call still waits: cancelled, the task is woken to end.
      const cancelled = await checked(
        await post(`/v1/tasks/${parked.jobId}/cancel`, undefined, {}, url),
        'post',
        '/v1/tasks/{jobId}/cancel',
      );
      expect(cancelled).toEqual({
        jobId: parked.jobId,
        state: 'awaiting_approval',
        cancelling: true,
        children: 0,
      });
    } finally {
      await approvals.close();
    }
  }, 60_000);

  it('notes: listed, read, forgotten one and all, refused, unknown; an API without notes', async () => {
    // The worker migrated the store; the notes are written as a worker keeps them.
    const pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 1 });
    const notes = new StoreNotes(ns.mysqlUrl);
    try {
      const expiresAt = new Date(Date.now() + 86_400_000);
      const drafts = ['one', 'two'].map((text) => ({
        agent: 'greeter',
        tenant: '',
        kind: 'fact' as const,
        text,
        sourceJobId: 'job-1',
        sourceStep: 1,
        expiresAt,
      }));
      const [first] = await new MysqlNoteStore(pool).add(drafts);
      const url = await listen(createApiServer({ client: ns.client, token: TOKEN, logger: silent, notes }));
      const del = (path: string) => fetch(`${url}${path}`, { method: 'DELETE', headers: auth });
      const list = '/v1/notes';
      const one = '/v1/notes/{noteId}';
      const listed = await checked(await get(`${list}?agent=greeter&tenant=`, auth, url), 'get', list);
      expect((listed as { notes: unknown[] }).notes).toHaveLength(2);
      await checked(await get(`${list}?limit=0`, auth, url), 'get', list);
      await checked(await get(`${list}/${first}`, auth, url), 'get', one);
      await checked(await get(`${list}/note_missing`, auth, url), 'get', one);
      await checked(await del(`${list}/${first}`), 'delete', one);
      await checked(await del(`${list}/${first}`), 'delete', one);
      await checked(await del(list), 'delete', list);
      expect(await checked(await del(`${list}?agent=greeter`), 'delete', list)).toEqual({ forgotten: 1 });
      const none = await listen(createApiServer({ client: ns.client, token: TOKEN, logger: silent }));
      await checked(await get(list, auth, none), 'get', list);
    } finally {
      await notes.close();
      await pool.end();
    }
  }, 60_000);

  it('agents, health, metrics and the document itself; Redis down and a failing client', async () => {
    const catalog = await checked(await get('/v1/agents'), 'get', '/v1/agents');
    expect((catalog as { agents: { name: string }[] }).agents.map((a) => a.name)).toEqual(['greeter']);
    // A fleet no worker has served yet: no catalog.
    const empty = new FleetClient({ redisUrl: REDIS_URL, prefix: `${ns.prefix}-empty` });
    clients.push(empty);
    const emptyBase = await listen(createApiServer({ client: empty, token: TOKEN, logger: silent }));
    expect(await checked(await get('/v1/agents', auth, emptyBase), 'get', '/v1/agents')).toEqual({
      hash: null,
      agents: [],
    });

    expect(await checked(await get('/healthz', {}), 'get', '/healthz')).toEqual({ status: 'ok' });
    await checked(await get('/metrics'), 'get', '/metrics');
    await checked(await get('/metrics', {}), 'get', '/metrics');
    expect(await checked(await get('/openapi.json', {}), 'get', '/openapi.json')).toEqual(
      JSON.parse(JSON.stringify(document)),
    );

    const down = new FleetClient({ redisUrl: 'redis://127.0.0.1:1', prefix: ns.prefix });
    clients.push(down);
    const downBase = await listen(
      createApiServer({
        client: down,
        token: TOKEN,
        logger: silent,
        healthCheck: () => Promise.reject(new Error('down')),
      }),
    );
    await checked(await get('/healthz', {}, downBase), 'get', '/healthz');
    await checked(await post('/v1/tasks', { task: 'hello' }, {}, downBase), 'post', '/v1/tasks');
    const broken = { getCatalog: () => Promise.reject(new Error('boom')) } as unknown as FleetClient;
    const brokenBase = await listen(createApiServer({ client: broken, token: TOKEN, logger: silent }));
    await checked(await get('/v1/agents', auth, brokenBase), 'get', '/v1/agents');
  }, 60_000);

  it('exercised every operation of the document, and each with its success status', () => {
    for (const [route, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const success = Object.keys(operation.responses).find((status) => status.startsWith('2'))!;
        expect(exercised, `${method} ${route}`).toContain(`${method} ${route} ${success}`);
      }
    }
    for (const status of ['400', '401', '404', '413', '415', '500', '503']) {
      expect(
        [...exercised].some((line) => line.endsWith(` ${status}`)),
        status,
      ).toBe(true);
    }
  });
});
