/* global process */
// The service's test of its own agents, offline: the scripted model, a worker serving the fleet in this process,
// tasks enqueued with the client, results checked. Needs Redis and MariaDB (REDIS_URL, MYSQL_URL); no API key.
// Run: node --test agents.test.js
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FleetClient } from 'agent-fleet/client';
import { startWorker } from 'agent-fleet/worker';
import fleet from './agent-fleet.config.js';
import { startModel } from './scripted-model.js';

const prefix = process.env.QUEUE_PREFIX ?? `agents-test-${process.pid}`;
let model;
let worker;
let client;

before(async () => {
  model = await startModel();
  // The worker reads its configuration from the environment when it starts.
  Object.assign(process.env, {
    OPENAI_BASE_URL: model.baseURL,
    OPENAI_API_KEY: 'test-key',
    // A scripted run is priced like any other: at LLM_MODEL's prices (gpt-5.4-mini by default). A model
    // name of the tests' own, priced at zero, keeps costs out of the results.
    LLM_MODEL: 'scripted',
    LLM_PRICES: JSON.stringify({ scripted: { inputPerMillion: 0, outputPerMillion: 0 } }),
    QUEUE_PREFIX: prefix,
    MYSQL_URL: process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/agents_test',
    METRICS_PORT: '0',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  });
  worker = await startWorker({ fleet });
  client = new FleetClient({ redisUrl: process.env.REDIS_URL, prefix });
});

after(async () => {
  await client?.close();
  await worker?.stop();
  await model?.close();
});

test('two agents answer two tasks at once, each from its own tool', async () => {
  const [greeting, order] = await Promise.all([
    client.enqueue({ agent: 'greeter', input: { name: 'Ada' } }),
    client.enqueue({ agent: 'order-status', input: { orderId: 'A-17' } }),
  ]);
  const [greeted, ordered] = await Promise.all([
    client.waitForResult(greeting.jobId, { timeoutMs: 60_000 }),
    client.waitForResult(order.jobId, { timeoutMs: 60_000 }),
  ]);

  assert.equal(greeted.status, 'succeeded');
  assert.deepEqual(greeted.output, { greeting: 'HELLO ADA', loud: true });
  assert.equal(greeted.toolCalls, 1);
  assert.equal(ordered.status, 'succeeded');
  assert.equal(ordered.answer, 'Order A-17: shipped on 2 June.');
  assert.equal(ordered.usage.costUsd, 0);

  // Two model calls per task, and no request the rules could not answer.
  assert.equal(model.requests.length, 4);
  assert.deepEqual(model.failures, []);
});
