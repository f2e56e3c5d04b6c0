// The wait of a call for a person's decision as a span: `approval_wait {tool}`, from when the run asked to when the
// call was decided (or expired), a child of the resumed run's `invoke_agent` span. The wait happened while no
// process held the job, so its span is made when the run resumes, with explicit start and end times: a trace
// then shows where a run's wall-clock time went, model, tools and people alike (docs/telemetry.md).
import { SpanKind, type Attributes, type Context, type Tracer } from '@opentelemetry/api';
import { safeJson, safeText } from './genai-content.js';

/**
 * A decided approval as the span needs it: the fields of an `Approval` (src/approvals/approval.ts) by name, so an
 * Approval is one and telemetry stays free of the approvals module.
 */
export interface DecidedWait {
  id: string;
  tool: string;
  /** The model's id of the call. */
  callId: string;
  step: number;
  /** `approved`, `rejected` or `expired`; a `pending` one has not ended its wait and has no span. */
  state: string;
  /** The credentials' name that decided; null when it expired. */
  decidedBy: string | null;
  reason: string | null;
  /** Null or undefined when approved as asked. */
  editedArguments: unknown;
  /** ISO 8601. */
  requestedAt: string;
  decidedAt: string | null;
}

const DECISION_OF_STATE: Readonly<Record<string, string>> = {
  approved: 'approve',
  rejected: 'reject',
  expired: 'expire',
};

/** The decider's name is a name, not a secret (a token's name, `console:<user>`), but kept short all the same. */
const DECIDED_BY_MAX_CHARS = 128;
/** A reason (and edited arguments) are a person's text: in the span only with content capture, scrubbed and cut. */
const REASON_MAX_CHARS = 2_000;

/** One ended span per decided wait, under `parent`; a wait without a decision time or with bad times has none. */
export function recordApprovalWaits(
  tracer: Tracer,
  parent: Context,
  waits: readonly DecidedWait[],
  captureContent: boolean,
): void {
  for (const wait of waits) {
    const decision = DECISION_OF_STATE[wait.state];
    const start = Date.parse(wait.requestedAt);
    const end = wait.decidedAt === null ? Number.NaN : Date.parse(wait.decidedAt);
    if (decision === undefined || !Number.isFinite(start) || !Number.isFinite(end)) continue;
    // No gen_ai.operation.name: a person's wait is no GenAI operation, and backends class spans by it.
    const attributes: Attributes = {
      'gen_ai.tool.name': wait.tool,
      'gen_ai.tool.call.id': wait.callId,
      'agent_fleet.step': wait.step,
      'agent_fleet.approval.id': wait.id,
      'agent_fleet.approval.decision': decision,
      'agent_fleet.approval.edited': wait.editedArguments !== null && wait.editedArguments !== undefined,
      'agent_fleet.approval.wait_ms': Math.max(0, end - start),
    };
    if (wait.decidedBy !== null) {
      attributes['agent_fleet.approval.decided_by'] = safeText(wait.decidedBy, DECIDED_BY_MAX_CHARS);
    }
    if (captureContent && wait.reason) {
      attributes['agent_fleet.approval.reason'] = safeText(wait.reason, REASON_MAX_CHARS);
    }
    if (captureContent && attributes['agent_fleet.approval.edited']) {
      attributes['agent_fleet.approval.edited_arguments'] = safeJson(wait.editedArguments);
    }
    // A rejection or an expiry is an answer, not a failure of the span: its status stays unset.
    const span = tracer.startSpan(
      `approval_wait ${wait.tool}`,
      { kind: SpanKind.INTERNAL, attributes, startTime: start },
      parent,
    );
    // A clock that put the decision before the request (two hosts' clocks) still ends the span, at its start.
    span.end(Math.max(start, end));
  }
}
