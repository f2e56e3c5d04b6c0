// A step row's trace events as the console and `npm run trace` read them back from agent_steps: every type the
// kernel writes comes back (a type missing from the reader was dropped from every stored step, so a run's
// recalled notes, clearings and approvals never reached its page); one of a type unknown here is left out.
import type { RowDataPacket } from 'mysql2/promise';
import { describe, expect, it } from 'vitest';
import type { TraceEvent } from '../../../src/kernel/types.js';
import { toStepRow } from '../../../src/store/rows.js';

const EVENTS: TraceEvent[] = [
  {
    type: 'fold',
    messages: 4,
    summary: 'earlier turns',
    byModel: false,
    modelCalls: 0,
    promptTokens: 0,
    completionTokens: 0,
    costUsd: 0,
  },
  { type: 'clear', results: 2, tokens: 812, tools: ['sql_query'] },
  { type: 'final_turn', reason: 'cost_budget', why: 'nearly spent' },
  {
    type: 'approval',
    callId: 'call_1',
    tool: 'send_email',
    decision: 'approve',
    by: 'ops',
    reason: null,
    requestedAt: 1,
    decidedAt: 2,
    editedArguments: { to: 'ada@example.com' },
  },
  {
    type: 'recall',
    query: 'total revenue',
    notes: [{ id: 'note_1', text: 'a <script> note' }],
  },
];

function raw(events: unknown[]): RowDataPacket {
  return {
    id: 1,
    job_id: '42',
    step: 1,
    kind: 'action',
    action: '[]',
    observation: '',
    prompt_tokens: 0,
    completion_tokens: 0,
    cached_prompt_tokens: 0,
    reasoning_tokens: 0,
    cost_usd: 0,
    latency_ms: 0,
    model_calls: 1,
    error: null,
    observations: null,
    model_latency_ms: null,
    events: JSON.stringify(events),
    created_at: new Date(),
  } as unknown as RowDataPacket;
}

describe('a step row’s events', () => {
  it('come back, every type the kernel writes', () => {
    expect(toStepRow(raw(EVENTS)).events).toEqual(EVENTS);
  });

  it('leave out a type (or shape) this code does not know', () => {
    const events = [{ type: 'from_a_newer_worker' }, { type: 'recall', query: 'q' }, EVENTS[1]];
    expect(toStepRow(raw(events)).events).toEqual([EVENTS[1]]);
  });
});
