// A child's hold is its budget in the spend ledger, which counts each call in whole micro-dollars rounded up; the
// child's kernel counts its budget exactly. At prices whose tokens cost fractions of a micro-dollar, the hold
// must still let the child make every call its own budget allows (real worker, Redis, MariaDB, scripted model).
import { afterAll, expect, it } from 'vitest';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { turnsIn } from '../../../src/testing/transcript.js';
import {
  createNamespace,
  FLEET_TEST_MODEL,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;

const taskOf = (request: RecordedRequest) => String(request.messages[1]?.content ?? '');
const toolResults = (request: RecordedRequest) =>
  request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));

/** A chain agent whose child keeps asking for a grandchild it may not have, until its share runs out. */
function spinModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  if (task === 'spin') {
    if (turnsIn(request.messages) === 0) return { actions: [{ tool: 'chain', args: { task: 'spinner' } }] };
    return { answer: `spin: ${toolResults(request).join(' | ')}` };
  }
  if (task === 'spinner') {
    if (!request.tools?.length) return { answer: 'what I had' };
    return { actions: [{ tool: 'chain', args: { task: `deeper ${turnsIn(request.messages)}` } }] };
  }
  return undefined;
}

setupOrFail(async () => {
  ns = createNamespace('holdround');
  model = await startScriptedModel({ rules: [spinModel] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/children.config.ts',
    AGENT_MAX_DEPTH: '1',
    // Tokens at fractions of a micro-dollar ($1.03 and $0.61 per million), and calls that may write many: a call
    // near the end of a budget is planned to fit what is left of it almost to the micro-dollar.
    LLM_PRICES: JSON.stringify({ [FLEET_TEST_MODEL]: { inputPerMillion: 1.03, outputPerMillion: 0.61 } }),
    LLM_MAX_TOKENS: '4000',
  });
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await model?.close();
});

it('a child makes every call its own budget allows, not refused by the rounding of its hold', async () => {
  const { jobId } = await ns.client.enqueue({ agent: 'chain', task: 'spin', budget: { maxCostUsd: 0.0035 } });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
  const child = await ns.client.getResult(result.children![0]!.jobId);
  // Refused by its hold, the child stopped after three steps with $0.0026 of its $0.0032 left, its final answer
  // refused too: its spend counted $0.000616 in the ledger, $0.000614 by its kernel.
  expect(child).toMatchObject({ status: 'stopped' });
  expect(child!.stopDetail ?? '').not.toMatch(/set aside for it cannot cover/);
  // Its last call, its final answer, was made.
  expect(child!.answer).toBe('what I had');
}, 90_000);
