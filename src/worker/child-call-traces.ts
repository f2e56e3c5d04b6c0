// The calls of child agents as tracing reads them (src/telemetry/child-call-spans.ts): those a parked run starts,
// and, when it resumes, those whose children have ended, from its checkpoint's turn. Plain data, so the worker
// builds them whether or not this process exports traces.
import type { Job } from 'bullmq';
import { childToolName, type ChildOutcome, type ChildRequest } from '../kernel/child-calls.js';
import { callKeyOf } from '../kernel/turn-approvals.js';
import type { RunState } from '../kernel/types.js';
import type { ChildCallTrace, ReturnedChildCall } from '../telemetry/telemetry-types.js';
import { childJobId } from './child-jobs.js';

/**
 * Whether each delivery of the job continues one trace: BullMQ puts its `process` span under the trace context
 * the job was added with, and a job added without one starts a trace of its own at each delivery.
 */
export function traceContinues(job: Pick<Job, 'opts'>): boolean {
  return typeof job.opts.telemetry?.metadata === 'string';
}

export function launchedCalls(awaiting: readonly ChildRequest[]): ChildCallTrace[] {
  return awaiting.map((child) => ({
    callKey: child.callKey,
    tool: childToolName(child.agent),
    callId: child.callId,
    step: child.step,
    agent: child.agent,
    jobId: childJobId(child.callKey),
    input: child.input,
  }));
}

/** The calls of the checkpoint's turn that have an outcome now. */
export function returnedCalls(
  checkpoint: RunState | null,
  outcomes: Readonly<Record<string, ChildOutcome>>,
): ReturnedChildCall[] {
  const pending = checkpoint?.pending;
  if (!checkpoint || !pending?.children) return [];
  const returned: ReturnedChildCall[] = [];
  pending.children.forEach((slot, i) => {
    const call = pending.calls[i];
    const callKey = callKeyOf(checkpoint.runId, checkpoint.steps, i);
    const outcome = outcomes[callKey];
    if (!slot || !call || !outcome || pending.results[i]) return;
    returned.push({
      callKey,
      tool: call.name,
      callId: call.id,
      step: checkpoint.steps,
      agent: slot.agent,
      jobId: outcome.jobId,
      input: slot.input,
      startedAt: pending.trace.startedAt,
      status: outcome.status,
      stopReason: outcome.stopReason,
      costUsd: outcome.usage.costUsd,
    });
  });
  return returned;
}
