// Which calls of a turn wait for a person, the decisions a resumed run applies, and what the run reports of
// them: the kernel's half of approvals (approval.ts has the types; docs/approvals.md the whole). A call is asked
// about once, when its turn is planned, and the answer is kept in the turn: a resume never asks again.
import type { ApprovalPolicy, ApprovalDecision, ApprovalRequest, RunApprovals } from './approval.js';
import { notApprovedObservation } from './approval.js';
import type { PlannedCall } from './protocol.js';
import type { Tool } from './tool.js';
import type { ToolRegistry } from './tool-registry.js';
import type { PendingApproval, PendingTurn, ToolCallRecord, TraceEvent } from './types.js';
import { withTimeout } from '../util/with-timeout.js';

/** The stable key of a call: side effects happen at most once per key, and an approval is recorded per key. */
export function callKeyOf(runId: string, step: number, index: number): string {
  return `${runId}:${step}:${index + 1}`;
}

export interface ApprovalCheck {
  policy: ApprovalPolicy;
  tools: ToolRegistry;
  runId: string;
  step: number;
  now: number;
  /** How long a tool's own rule may take (the tool's time limit, else the run's default). */
  defaultTimeoutMs: number;
  /** Told when a tool's rule failed: the call then waits for a decision. */
  onRuleFailed(tool: string, error: unknown): void;
}

/** One slot per call of a new turn, null for a call that runs without a decision; undefined when none waits. */
export async function approvalsFor(
  calls: readonly PlannedCall[],
  check: ApprovalCheck,
): Promise<(PendingApproval | null)[] | undefined> {
  // Most turns have no call that could ask: they cost a lookup per call here, no parse (runToolCall parses).
  const mayAsk = (tool: Tool | undefined): tool is Tool =>
    tool !== undefined &&
    ((check.policy === 'side-effects' && tool.readOnly !== true) ||
      (tool.needsApproval !== undefined && tool.needsApproval !== false));
  if (!calls.some((call) => mayAsk(check.tools.get(call.name)))) return undefined;
  const slots = await Promise.all(
    calls.map(async (call): Promise<PendingApproval | null> => {
      const tool = check.tools.get(call.name);
      // An unknown tool or arguments its schema refuses run nothing: the model is told why, no one is asked.
      if (!mayAsk(tool) || !call.args.ok) return null;
      const parsed = tool.parameters.safeParse(call.args.value ?? {});
      if (!parsed.success) return null;
      const asks =
        (check.policy === 'side-effects' && tool.readOnly !== true) ||
        (await toolAsks(tool, parsed.data, check));
      // The person sees (and may edit) the arguments as the model gave them, which the schema accepted: an edit
      // goes through the schema again, so showing its output would apply a transform twice.
      return asks ? { requestedAt: check.now, arguments: call.args.value ?? {} } : null;
    }),
  );
  return slots.some((slot) => slot !== null) ? slots : undefined;
}

/** A tool's own rule; one that throws, hangs or answers anything but `false` asks: the safe side. */
async function toolAsks(tool: Tool, args: unknown, check: ApprovalCheck): Promise<boolean> {
  const rule = tool.needsApproval;
  if (rule === undefined || rule === false) return false;
  if (rule === true) return true;
  try {
    const context = { runId: check.runId, step: check.step, tool: tool.name };
    const answer = await withTimeout(
      Promise.resolve().then(() => rule(args, context)),
      tool.timeoutMs ?? check.defaultTimeoutMs,
    );
    return answer !== false;
  } catch (error) {
    check.onRuleFailed(tool.name, error);
    return true;
  }
}

/** Takes the decisions given for the turn's undecided calls (by call key) into the turn. */
export function applyDecisions(
  pending: PendingTurn,
  given: RunApprovals | undefined,
  runId: string,
  step: number,
): void {
  const decisions = given?.decisions;
  if (!pending.approvals || !decisions) return;
  pending.approvals.forEach((slot, i) => {
    if (!slot || slot.decision || pending.results[i]) return;
    const decision = decisions[callKeyOf(runId, step, i)];
    if (decision) slot.decision = decision;
  });
}

/** The calls of the turn still waiting for a decision, as the run asks about them. */
export function awaitingOf(pending: PendingTurn, runId: string, step: number): ApprovalRequest[] {
  const awaiting: ApprovalRequest[] = [];
  pending.approvals?.forEach((slot, i) => {
    const call = pending.calls[i];
    if (!slot || slot.decision || pending.results[i] || !call) return;
    awaiting.push({
      callKey: callKeyOf(runId, step, i),
      callId: call.id,
      step,
      tool: call.name,
      arguments: slot.arguments,
      requestedAt: slot.requestedAt,
    });
  });
  return awaiting;
}

/**
 * What a call runs as once decided: null while it waits; a record (not run) when it was rejected or expired;
 * the call, with the approver's arguments when they changed them, when it was approved. Arguments changed by
 * a person go through the tool's schema again, like any call's.
 */
export function decidedCall(
  call: PlannedCall,
  slot: PendingApproval | null | undefined,
): { run: PlannedCall } | { record: ToolCallRecord } | null {
  if (!slot) return { run: call };
  const decision = slot.decision;
  if (!decision) return null;
  if (decision.decision === 'approve') {
    if (decision.arguments === undefined) return { run: call };
    return { run: { ...call, args: { ok: true, value: decision.arguments } } };
  }
  return {
    record: {
      id: call.id,
      tool: call.name,
      args: slot.arguments,
      ok: false,
      output: notApprovedObservation(decision),
      errorCode: decision.decision === 'expire' ? 'approval_expired' : 'approval_rejected',
      latencyMs: 0,
    },
  };
}

/** One trace event per decided call of the turn: who, when, why, and any edit. */
export function approvalEvents(pending: PendingTurn): TraceEvent[] {
  const events: TraceEvent[] = [];
  pending.approvals?.forEach((slot, i) => {
    const call = pending.calls[i];
    if (!slot?.decision || !call) return;
    events.push(approvalEvent(call, slot, slot.decision));
  });
  return events;
}

function approvalEvent(call: PlannedCall, slot: PendingApproval, decision: ApprovalDecision): TraceEvent {
  return {
    type: 'approval',
    callId: call.id,
    tool: call.name,
    decision: decision.decision,
    by: decision.decision === 'expire' ? null : decision.by,
    reason:
      decision.decision === 'reject' ? decision.reason : decision.decision === 'expire' ? 'expired' : null,
    requestedAt: slot.requestedAt,
    decidedAt: decision.decidedAt ?? null,
    ...(decision.decision === 'approve' && decision.arguments !== undefined
      ? { editedArguments: decision.arguments }
      : {}),
  };
}
