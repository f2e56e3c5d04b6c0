// One run's notes against the real store (a database of its own, dropped at the end): at the run's end, the
// corrections its trace shows are kept; a correction it was shown and found wrong (the arguments the note says
// worked failed in this run) is dropped; a failed run weighs down what it was shown; the result names them.
import { randomBytes } from 'node:crypto';
import type { Pool } from 'mysql2/promise';
import { afterAll, expect, it } from 'vitest';
import { tokenCounterFor } from '../../../src/kernel/tokens.js';
import type { AgentResult, StepTrace } from '../../../src/kernel/types.js';
import { createLogger } from '../../../src/logging/logger.js';
import { MysqlNoteStore } from '../../../src/notes/notes-store.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { RunNotes } from '../../../src/worker/run-notes.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const DATABASE = `af_test_nsess_${randomBytes(4).toString('hex')}`;
let pool: Pool;
let store: MysqlNoteStore;
let notes: RunNotes;
const log = createLogger('test', 'silent');
const settings = { recall: 5, maxTokens: 400, keepDays: 30, write: false };
const owner = { agent: 'analyst', tenant: 'acme' };

setupOrFail(async () => {
  pool = await createStorePool(`mysql://root@127.0.0.1:3306/${DATABASE}`);
  await migrate(pool);
  store = new MysqlNoteStore(pool);
  notes = new RunNotes(store, tokenCounterFor('gpt-4o'));
});

afterAll(async () => {
  await pool?.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
  await pool?.end();
});

function step(n: number, tool: string, args: unknown, ok: boolean, observation: string): StepTrace {
  return {
    runId: `job-${n}`,
    step: n,
    kind: 'action',
    actions: [{ id: `call_${n}`, tool, args, ok, errorCode: ok ? null : 'tool_failed', latencyMs: 1 }],
    observations: [observation],
    promptTokens: 1,
    completionTokens: 1,
    costUsd: 0,
    latencyMs: 1,
    modelLatencyMs: 1,
    modelCalls: 1,
    error: null,
    totals: {} as StepTrace['totals'],
  };
}

const result = (status: AgentResult['status']): AgentResult => ({
  jobId: 'job',
  status,
  stopReason: status === 'succeeded' ? 'answer' : 'error',
  answer: null,
  steps: 2,
  toolCalls: 2,
  usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0 },
  error: null,
});

it('a correction kept by one run, recalled by the next, and dropped by the run that found it wrong', async () => {
  const first = notes.session(owner, settings, 'What is the revenue?');
  await first.close(
    {
      jobId: 'job-1',
      traces: [
        step(1, 'sql_query', { sql: 'SELECT revenue' }, false, "Error: Unknown column 'revenue'"),
        step(2, 'sql_query', { sql: 'SELECT amount' }, true, 'amount\n42'),
      ],
      result: result('succeeded'),
    },
    log,
  );
  const [kept] = await store.list(owner);
  expect(kept?.text).toContain('it worked with {"sql":"SELECT amount"}');

  const second = notes.session(owner, settings, 'What is the revenue?');
  const recall = await second.opening(log);
  expect(recall?.notes.map((n) => n.id)).toEqual([kept!.id]);
  const ended = result('succeeded');
  ended.notesUsed = [kept!.id];
  // The schema changed: the query the note says worked fails now, and another works.
  await second.close(
    {
      jobId: 'job-2',
      traces: [
        step(1, 'sql_query', { sql: 'SELECT amount' }, false, "Error: Unknown column 'amount'"),
        step(2, 'sql_query', { sql: 'SELECT amount_usd' }, true, 'amount_usd\n42'),
      ],
      result: ended,
    },
    log,
  );
  expect(await store.get(kept!.id)).toBeNull();
  // What it learned instead is kept.
  const now = await store.list(owner);
  expect(now.map((n) => n.text)).toEqual([
    expect.stringContaining('it worked with {"sql":"SELECT amount_usd"}'),
  ]);
  expect(ended.notesUsed).toEqual([kept!.id]);
});

it('a failed run weighs down the notes it was shown', async () => {
  const [note] = await store.list(owner);
  const session = notes.session(owner, settings, 'What is the revenue?');
  await session.opening(log);
  const failed = result('failed');
  failed.error = { kind: 'model_behavior', code: 'repeated_action', message: 'repeated', retryable: false };
  await session.close({ jobId: 'job-3', traces: [], result: failed }, log);
  expect((await store.get(note!.id))?.weight).toBe(0.5);
});
