/* global process */
// The greeter's test, offline: the scripted model (no API key), a worker serving agent-fleet.config.js in this
// process, one task enqueued with the client and its result checked. Needs Redis and MySQL or MariaDB
// (REDIS_URL, MYSQL_URL; see .env.example). Run: node --test
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FleetClient } from 'agent-fleet/client';
import { observationsIn, startScriptedModel } from 'agent-fleet/testing';
import { startWorker } from 'agent-fleet/worker';
import fleet from './agent-fleet.config.js';

/** The model of this test: a rule that plays the greeter's run, deciding from the request's transcript. */
function greeterRule(request) {
  const name = /^Greet ([^.]+)\./.exec(String(request.messages[0]?.content ?? ''))?.[1];
  if (name === undefined) return undefined; // not the greeter: the next rule is asked
  const [shouted] = observationsIn(request.messages); // what the run's tool calls returned so far
  if (shouted === undefined) return { actions: [{ tool: 'shout', args: { text: name } }] };
  return { output: { greeting: `HELLO ${shouted.trim()}`, loud: true } };
}

const prefix = process.env.QUEUE_PREFIX ?? `greeter-test-${process.pid}`;
let model;
let worker;
let client;

before(async () => {
  model = await startScriptedModel({ rules: [greeterRule] });
  // The worker reads its configuration from the environment when it starts.
  Object.assign(process.env, {
    OPENAI_BASE_URL: model.baseURL,
    OPENAI_API_KEY: 'scripted',
    // A model name of the test's own, priced at zero: a scripted run costs nothing.
    LLM_MODEL: 'scripted',
    LLM_PRICES: JSON.stringify({ scripted: { inputPerMillion: 0, outputPerMillion: 0 } }),
    QUEUE_PREFIX: prefix,
    MYSQL_URL: process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/agent_fleet_test',
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

test('the greeter shouts the name with its tool and answers the typed output', async () => {
  const { jobId } = await client.enqueue({ agent: 'greeter', input: { name: 'Ada' } });
  const result = await client.waitForResult(jobId, { timeoutMs: 60_000 });

  assert.equal(result.status, 'succeeded', JSON.stringify(result.error));
  assert.deepEqual(result.output, { greeting: 'HELLO ADA', loud: true });
  assert.equal(result.toolCalls, 1);
  assert.equal(result.usage.costUsd, 0);
  // Two model calls, and no request the rule could not answer.
  assert.equal(model.requests.length, 2);
  assert.deepEqual(model.failures, []);
});
