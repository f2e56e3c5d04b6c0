// MODEL_TPM through two worker processes, configured per model as an operator writes it: once the model's
// tokens of the minute are used, every call of the fleet waits, and no minute the endpoint sees holds more.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  FLEET_TEST_MODEL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { stepsModel } from '../../support/steps-model.js';

const TPM = 6_000;
let server: ScriptedModelServer;
let ns: FleetNamespace;
const workers: WorkerHandle[] = [];

beforeAll(async () => {
  server = await startScriptedModel({ rules: [stepsModel], latencyMs: 30 });
  ns = createNamespace('tpm');
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorker(ns, {
        OPENAI_BASE_URL: server.baseURL,
        AGENT_PROTOCOL: 'json',
        WORKER_CONCURRENCY: '5',
        AGENT_MAX_COST_USD: '1',
        // The model the tasks run (the fleet tests' model) has a limit; others would have none.
        MODEL_TPM: `${FLEET_TEST_MODEL}=${TPM},other-model=1000000`,
        METRICS_PORT: '0',
      }),
    );
  }
  await Promise.all(workers.map((w) => w.waitForOutput(/worker started/)));
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await ns?.cleanup();
  await server?.close();
});

const tokensSeen = () =>
  server.requests.reduce(
    (sum, r) => sum + (r.usage ? r.usage.promptTokens + r.usage.completionTokens : 0),
    0,
  );

describe('MODEL_TPM', () => {
  it('two workers together stay within the minute: calls wait once its tokens are used', async () => {
    const jobs = await Promise.all(
      Array.from({ length: 10 }, (_, i) => ns.client.enqueue({ task: `job t${i}: 4 steps` })),
    );
    const started = Date.now();
    // Enough work for two minutes' tokens: within the first minute the fleet uses at most one minute's worth.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const seen = tokensSeen();
    expect(Date.now() - started).toBeLessThan(55_000);
    expect(seen).toBeLessThanOrEqual(TPM);
    // The limit was reached, not merely approached: the next call did not fit.
    expect(seen).toBeGreaterThan(TPM / 3);
    const done = await Promise.all(jobs.map(({ jobId }) => ns.client.getResult(jobId)));
    expect(done.filter((r) => r === null).length).toBeGreaterThan(0);
  }, 60_000);
});
