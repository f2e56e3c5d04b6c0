// Notes across tasks through a real worker (Redis, MariaDB, the scripted model over HTTP): the first run of an
// agent with notes on tries a column that does not exist, corrects itself, and leaves that correction as a note;
// the second run of the same task opens with the note as the output of a `recall_notes` call, and a model that
// reasons from its transcript writes the right query first: one model call fewer. Notes stay with their agent and
// tenant, reach the model only as tool output, and the result names the notes a run was given.
import { afterAll, expect, it } from 'vitest';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { modelCalls } from '../../../src/testing/transcript.js';
import { ConsoleStore } from '../../../src/console/console-store.js';
import { h } from '../../../src/console/pages/layout.js';
import { runPage } from '../../../src/console/pages/run-page.js';
import { buildTimeline } from '../../../src/console/timeline.js';
import { createStorePool } from '../../../src/store/pool.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;

const TASK = 'What is the total revenue?';

/**
 * A model that knows what it did from its transcript: it sums `revenue` unless something it has read (a recalled
 * note, or its own failed call) says that column does not exist and which one worked; then it answers.
 */
function salesModel(request: RecordedRequest): ScriptedReply | undefined {
  if (!String(request.messages[1]?.content ?? '').includes(TASK)) return undefined;
  const calls = modelCalls(request.messages);
  const own = calls.filter((c) => c.tool === 'sales_query');
  const done = own.find((c) => c.result?.includes('"total"'));
  if (done) return { answer: `total: ${done.result}` };
  const read = calls.map((c) => c.result ?? '').join('\n');
  const learned = /it worked with \{\\?"column\\?":\\?"(\w+)\\?"\}/.exec(read)?.[1];
  if (learned) return { actions: [{ tool: 'sales_query', args: { column: learned } }] };
  if (own.some((c) => /Unknown column 'revenue'/.test(c.result ?? ''))) {
    return { actions: [{ tool: 'sales_query', args: { column: 'amount' } }] };
  }
  return { actions: [{ tool: 'sales_query', args: { column: 'revenue' } }] };
}

const FACT = 'The fiscal year starts in April.';

/** Keeps a note of what it found unless a recalled note already says it; then answers with what it knows. */
function scribeModel(request: RecordedRequest): ScriptedReply | undefined {
  if (!String(request.messages[1]?.content ?? '').startsWith('When does the fiscal year start?'))
    return undefined;
  const calls = modelCalls(request.messages);
  const known = calls.some(
    (c) => (c.tool === 'recall_notes' || c.tool === 'keep_note') && c.result?.includes('April'),
  );
  if (known || calls.some((c) => c.tool === 'keep_note')) return { answer: 'April' };
  return { actions: [{ tool: 'keep_note', args: { text: FACT } }] };
}

setupOrFail(async () => {
  ns = createNamespace('notes');
  model = await startScriptedModel({ rules: [salesModel, scribeModel] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/notes.config.ts',
  });
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await model?.close();
});

async function run(agent: string, tenant?: string, task = TASK) {
  const first = model.requests.length;
  const { jobId } = await ns.client.enqueue({ agent, task, ...(tenant ? { tenant } : {}) });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
  return { result, requests: model.requests.slice(first) };
}

it('the second run starts from what the first learned: the right query first, one model call fewer', async () => {
  const first = await run('analyst', 'acme');
  expect(first.result).toMatchObject({ status: 'succeeded' });
  expect(first.requests).toHaveLength(3); // revenue (fails), amount, the answer
  expect(first.result.notesUsed).toBeUndefined();
  // With no note to recall, the run is not offered recall_notes: it pays nothing for notes it does not have.
  const toolsOf = (r: RecordedRequest) => (r.tools ?? []).map((t) => t.function.name);
  for (const request of first.requests) expect(toolsOf(request)).toEqual(['sales_query']);
  const notes = await queryStore<{
    id: string;
    kind: string;
    text: string;
    tenant: string;
    source_job_id: string;
  }>(ns, "SELECT id, kind, text, tenant, source_job_id FROM agent_notes WHERE agent = 'analyst'");
  expect(notes).toHaveLength(1);
  expect(notes[0]).toMatchObject({ kind: 'correction', tenant: 'acme', source_job_id: first.result.jobId });
  expect(notes[0]!.text).toContain("Unknown column 'revenue'");

  const second = await run('analyst', 'acme');
  expect(second.result).toMatchObject({ status: 'succeeded', answer: first.result.answer });
  expect(second.requests).toHaveLength(2); // amount at once, the answer
  expect(second.result.notesUsed).toEqual([notes[0]!.id]);
  // The note reached the model as a tool's output at the head of the transcript, and nowhere else.
  const messages = second.requests[0]!.messages;
  expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
  expect(messages[2]).toMatchObject({
    tool_calls: [{ function: { name: 'recall_notes', arguments: '{}' } }],
  });
  for (const request of second.requests) expect(toolsOf(request)).toEqual(['sales_query', 'recall_notes']);
  for (const message of second.requests.flatMap((r) => r.messages)) {
    if (message.role === 'system' || message.role === 'user')
      expect(message.content).not.toContain('Unknown column');
  }
  // The prompt tokens the recall added are billed like any: the run's usage is the server's own count.
  const served = second.requests.reduce((sum, r) => sum + r.usage!.promptTokens, 0);
  expect(second.result.usage.promptTokens).toBe(served);
  // The trace shows the recall, made by the fleet.
  const steps = await queryStore<{ events: string | null }>(
    ns,
    'SELECT events FROM agent_steps WHERE job_id = ? ORDER BY step LIMIT 1',
    [second.result.jobId],
  );
  expect(JSON.stringify(steps[0]?.events)).toContain('recall');
  // The console's run page shows that stored recall: the note's id and its text, escaped.
  const consoleStore = new ConsoleStore(() => createStorePool(ns.mysqlUrl, { connectionLimit: 1 }));
  try {
    const loaded = (await consoleStore.loadRun(second.result.jobId))!;
    const html = runPage(buildTimeline(loaded.run, loaded.steps, loaded.children));
    expect(html).toContain('recalled notes (by the fleet, not the model): 1');
    expect(html).toContain(
      `<code class="note-id">${notes[0]!.id}</code><pre class="note-text">${h(notes[0]!.text)}</pre>`,
    );
  } finally {
    await consoleStore.close();
  }
}, 90_000);

it("notes stay with their tenant and their agent: another tenant's run, or another agent's, starts from zero", async () => {
  const other = await run('analyst', 'globex');
  expect(other.requests).toHaveLength(3);
  expect(other.result.notesUsed).toBeUndefined();
  expect(other.requests[0]!.messages.map((m) => m.role)).toEqual(['system', 'user']);
  const without = await run('forgetful', 'acme');
  expect(without.requests).toHaveLength(3);
  expect(without.requests[0]!.messages.map((m) => m.role)).toEqual(['system', 'user']);
  // Without notes on, a run leaves none.
  const left = await queryStore<{ n: number }>(
    ns,
    "SELECT COUNT(*) AS n FROM agent_notes WHERE agent = 'forgetful'",
  );
  expect(Number(left[0]!.n)).toBe(0);
}, 90_000);

it('an agent that may write notes keeps one with keep_note, within its run, and its next run recalls it', async () => {
  const first = await run('scribe', undefined, 'When does the fiscal year start?');
  expect(first.result).toMatchObject({ status: 'succeeded', answer: 'April' });
  expect(first.requests).toHaveLength(2); // keep_note, the answer
  const kept = await queryStore<{ id: string; kind: string; text: string; source_job_id: string }>(
    ns,
    "SELECT id, kind, text, source_job_id FROM agent_notes WHERE agent = 'scribe'",
  );
  expect(kept).toEqual([
    expect.objectContaining({ kind: 'model', text: FACT, source_job_id: first.result.jobId }),
  ]);
  const second = await run('scribe', undefined, 'When does the fiscal year start?');
  expect(second.requests).toHaveLength(1); // it knew, from the recalled note
  expect(second.result.notesUsed).toEqual([kept[0]!.id]);
}, 90_000);
