// The `execute_tool {child tool}` span of a child agent's call, the span its child's `invoke_agent` descends
// from (docs/child-agents.md, "Seeing the tree"). The call outlives the process that made it: launched by one
// delivery of the parent's job, answered when another (on any worker) resumes. So its span id is chosen at
// launch, derived from the call's key, and handed to the child as a W3C traceparent; the span itself is recorded
// when the parent resumes, as a child of the resumed run's `invoke_agent` (as approval waits are), with explicit
// times: from when the turn's calls started to the resume. That needs the resume in the launch's trace, which
// holds when the job carries a trace context (BullMQ gives each delivery a `process` span under it); a job
// without one starts a new trace at each delivery, so its call's span is recorded at launch instead, and ends
// there: the child's spans then continue the launch's trace under a span that only says the call was made.
import { createHash } from 'node:crypto';
import {
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Tracer,
} from '@opentelemetry/api';
import type { SpanIdChooser } from './chosen-span-ids.js';
import { safeJson } from './genai-content.js';
import { formatTraceparent } from './traceparent.js';

/** A child agent's call as its span needs it. */
export interface ChildCallTrace {
  callKey: string;
  /** The tool the parent's model called: the child's name, `-` as `_`. */
  tool: string;
  /** The model's id of the call. */
  callId: string;
  step: number;
  agent: string;
  /** The child's job. */
  jobId: string;
  /** The validated arguments: in the span only with content capture. */
  input?: unknown;
}

/** A call whose child has ended, as the resumed parent reads it. */
export interface ReturnedChildCall extends ChildCallTrace {
  /** When the turn's calls started (epoch ms): the call's span starts there. */
  startedAt: number;
  status: string;
  stopReason: string;
  costUsd: number;
}

/** The span id of a call's `execute_tool` span: the same in every process that computes it. */
export function childCallSpanId(callKey: string): string {
  const id = createHash('sha256').update(`execute_tool:${callKey}`).digest('hex').slice(0, 16);
  // An all-zero id is invalid; one in 2^64.
  return /^0+$/.test(id) ? '0000000000000001' : id;
}

export interface ChildCallSpans {
  tracer: Tracer;
  /** Absent: ids cannot be chosen, every call's span is recorded at launch. */
  spanIds: SpanIdChooser | undefined;
  captureContent: boolean;
}

/**
 * At launch: the traceparent of each call (by call key) for its child's task. `resumeInTrace`: the job's next
 * delivery continues this trace, so the span waits for the resume; otherwise it is recorded now, under `run`.
 */
export function launchChildCalls(
  spans: ChildCallSpans,
  run: Context,
  calls: readonly ChildCallTrace[],
  resumeInTrace: boolean,
): Record<string, string> {
  const runSpan = trace.getSpanContext(run);
  if (!runSpan || !trace.isSpanContextValid(runSpan)) return {};
  const traceparents: Record<string, string> = {};
  for (const call of calls) {
    if (resumeInTrace && spans.spanIds) {
      const sampled = (runSpan.traceFlags & 1) === 1;
      traceparents[call.callKey] = formatTraceparent({
        traceId: runSpan.traceId,
        spanId: childCallSpanId(call.callKey),
        sampled,
      });
      continue;
    }
    const span = spans.tracer.startSpan(
      `execute_tool ${call.tool}`,
      { kind: SpanKind.INTERNAL, attributes: callAttributes(call, spans.captureContent) },
      run,
    );
    span.setAttribute('agent_fleet.child.span_ends', 'launch');
    span.end();
    const context = span.spanContext();
    traceparents[call.callKey] = formatTraceparent({
      traceId: context.traceId,
      spanId: context.spanId,
      sampled: (context.traceFlags & 1) === 1,
    });
  }
  return traceparents;
}

/** At the parent's resume: each returned call's span, under the resumed run, with the id its child was given. */
export function recordReturnedChildCalls(
  spans: ChildCallSpans,
  run: Context,
  calls: readonly ReturnedChildCall[],
  now = Date.now(),
): void {
  const spanIds = spans.spanIds;
  if (!spanIds) return;
  for (const call of calls) {
    const attributes = callAttributes(call, spans.captureContent);
    attributes['agent_fleet.child.status'] = call.status;
    attributes['agent_fleet.child.stop_reason'] = call.stopReason;
    attributes['agent_fleet.cost_usd'] = call.costUsd;
    const start = Math.min(call.startedAt, now);
    const span = spanIds.withSpanId(childCallSpanId(call.callKey), () =>
      spans.tracer.startSpan(
        `execute_tool ${call.tool}`,
        { kind: SpanKind.INTERNAL, attributes, startTime: start },
        run,
      ),
    );
    if (call.status !== 'succeeded') {
      const type = `child_${call.stopReason}`;
      span.setAttribute('error.type', type);
      span.setStatus({ code: SpanStatusCode.ERROR, message: type });
    }
    span.end(now);
  }
}

function callAttributes(call: ChildCallTrace, captureContent: boolean): Attributes {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.tool,
    'gen_ai.tool.call.id': call.callId,
    'gen_ai.tool.type': 'function',
    'agent_fleet.step': call.step,
    'agent_fleet.child.agent': call.agent,
    'agent_fleet.child.job_id': call.jobId,
  };
  if (captureContent && call.input !== undefined)
    attributes['gen_ai.tool.call.arguments'] = safeJson(call.input);
  return attributes;
}
