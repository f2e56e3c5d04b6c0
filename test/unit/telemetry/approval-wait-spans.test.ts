// Approvals in GenAI traces, with an in-memory exporter: a resumed run's decided calls become `approval_wait {tool}`
// spans under its invoke_agent span, from their request to their decision (explicit times: the wait happened while
// no process held the job), with the decision, who made it and whether the arguments were edited; and a run that
// parks for approval ends its span marked parked, never as an error.
import { SpanStatusCode } from '@opentelemetry/api';
import { hrTimeToMilliseconds } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import type { Approval } from '../../../src/approvals/approval.js';
import type { AgentResult } from '../../../src/kernel/types.js';
import { GenAiTracing } from '../../../src/telemetry/genai-tracing.js';

function setUp(captureContent = false) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracing = new GenAiTracing(provider.getTracer('test'), { captureContent });
  const run = tracing.startRun({ jobId: '7', agent: 'mailer', model: 'm', attempt: 2, task: 'the task' });
  return { run, spans: () => exporter.getFinishedSpans() };
}

const REQUESTED = '2026-03-01T09:00:00.000Z';

function approval(position: number, fields: Partial<Approval>): Approval {
  return {
    id: `apr_${position}`,
    jobId: '7',
    batchId: null,
    tenant: null,
    agent: 'mailer',
    step: 1,
    callId: `call_${position}`,
    callKey: `7:1:${position}`,
    tool: 'send_email',
    arguments: { to: 'ada@example.com' },
    state: 'approved',
    requestedAt: REQUESTED,
    expiresAt: '2026-03-02T09:00:00.000Z',
    decidedBy: 'alice',
    decision: 'approve',
    reason: null,
    editedArguments: null,
    decidedAt: '2026-03-01T09:30:00.000Z',
    ...fields,
  };
}

const DECIDED: Approval[] = [
  approval(0, { editedArguments: { to: 'bob@example.com' }, reason: 'to Bob instead' }),
  approval(1, {
    tool: 'delete_rows',
    state: 'rejected',
    decision: 'reject',
    decidedBy: 'console:carol',
    reason: 'not on a Friday; password=hunter2',
    decidedAt: '2026-03-01T11:00:00.000Z',
  }),
  approval(2, {
    state: 'expired',
    decision: 'reject',
    decidedBy: null,
    reason: 'expired',
    decidedAt: '2026-03-02T09:00:00.000Z',
  }),
];

const parked: AgentResult = {
  jobId: '7',
  status: 'stopped',
  stopReason: 'awaiting_approval',
  answer: null,
  steps: 1,
  toolCalls: 1,
  usage: { promptTokens: 100, completionTokens: 20, totalTokens: 120, costUsd: 0.0016 },
  error: null,
  awaitingApproval: [
    { callKey: '7:2:0', callId: 'call_9', step: 2, tool: 'send_email', arguments: {}, requestedAt: 0 },
  ],
};

describe('approval_wait spans', () => {
  it('one per decided call, under the resumed run, from its request to its decision', () => {
    const { run, spans } = setUp();
    // A pending one (still waiting) has no span.
    run.approvalWaits([...DECIDED, approval(3, { state: 'pending', decidedAt: null, decidedBy: null })]);
    run.end({ ...parked, stopReason: 'answer', status: 'succeeded', answer: 'sent', awaitingApproval: [] });
    const agent = spans().find((s) => s.name === 'invoke_agent mailer')!;
    const waits = spans().filter((s) => s.name.startsWith('approval_wait '));
    expect(waits.map((s) => s.name)).toEqual([
      'approval_wait send_email',
      'approval_wait delete_rows',
      'approval_wait send_email',
    ]);
    for (const [i, span] of waits.entries()) {
      expect(span.parentSpanContext?.spanId).toBe(agent.spanContext().spanId);
      expect(span.spanContext().traceId).toBe(agent.spanContext().traceId);
      expect(hrTimeToMilliseconds(span.startTime)).toBe(Date.parse(REQUESTED));
      expect(hrTimeToMilliseconds(span.endTime)).toBe(Date.parse(DECIDED[i]!.decidedAt!));
      // A rejection or an expiry is an answer, not an error.
      expect(span.status.code).toBe(SpanStatusCode.UNSET);
    }
    expect(waits[0]!.attributes).toEqual({
      'gen_ai.tool.name': 'send_email',
      'gen_ai.tool.call.id': 'call_0',
      'agent_fleet.step': 1,
      'agent_fleet.approval.id': 'apr_0',
      'agent_fleet.approval.decision': 'approve',
      'agent_fleet.approval.decided_by': 'alice',
      'agent_fleet.approval.edited': true,
      'agent_fleet.approval.wait_ms': 30 * 60_000,
    });
    expect(waits[1]!.attributes).toMatchObject({
      'gen_ai.tool.name': 'delete_rows',
      'agent_fleet.approval.decision': 'reject',
      'agent_fleet.approval.decided_by': 'console:carol',
      'agent_fleet.approval.edited': false,
      'agent_fleet.approval.wait_ms': 2 * 3_600_000,
    });
    // Expired: decided by nobody.
    expect(waits[2]!.attributes).toMatchObject({
      'agent_fleet.approval.decision': 'expire',
      'agent_fleet.approval.edited': false,
      'agent_fleet.approval.wait_ms': 24 * 3_600_000,
    });
    expect(waits[2]!.attributes['agent_fleet.approval.decided_by']).toBeUndefined();
    // Without content capture, no text a person wrote.
    for (const span of waits) {
      expect(span.attributes['agent_fleet.approval.reason']).toBeUndefined();
      expect(span.attributes['agent_fleet.approval.edited_arguments']).toBeUndefined();
    }
  });

  it('with content capture, the reason and the edited arguments, scrubbed', () => {
    const { run, spans } = setUp(true);
    run.approvalWaits(DECIDED);
    const [edited, rejected] = spans().filter((s) => s.name.startsWith('approval_wait '));
    expect(edited!.attributes['agent_fleet.approval.reason']).toBe('to Bob instead');
    expect(JSON.parse(String(edited!.attributes['agent_fleet.approval.edited_arguments']))).toEqual({
      to: 'bob@example.com',
    });
    expect(rejected!.attributes['agent_fleet.approval.reason']).toMatch(/^not on a Friday; /);
    expect(rejected!.attributes['agent_fleet.approval.reason']).not.toContain('hunter2');
  });

  it('a decision stamped before its request (two hosts’ clocks) ends the span at its start; bad times have none', () => {
    const { run, spans } = setUp();
    run.approvalWaits([
      approval(0, { decidedAt: '2026-03-01T08:59:59.000Z' }),
      approval(1, { requestedAt: 'not a time' }),
    ]);
    const waits = spans().filter((s) => s.name.startsWith('approval_wait '));
    expect(waits).toHaveLength(1);
    expect(hrTimeToMilliseconds(waits[0]!.endTime)).toBe(Date.parse(REQUESTED));
    expect(waits[0]!.attributes['agent_fleet.approval.wait_ms']).toBe(0);
  });
});

describe('a run that parks for approval', () => {
  it('ends its span marked parked, with how many calls wait, and not as an error', () => {
    const { run, spans } = setUp();
    run.end(parked);
    const agent = spans().find((s) => s.name === 'invoke_agent mailer')!;
    expect(agent.status.code).toBe(SpanStatusCode.UNSET);
    expect(agent.attributes).toMatchObject({
      'agent_fleet.run.stop_reason': 'awaiting_approval',
      'agent_fleet.run.parked': true,
      'agent_fleet.approval.awaiting': 1,
    });
    expect(agent.attributes['error.type']).toBeUndefined();
  });
});
