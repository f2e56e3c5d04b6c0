// Where decisions are made: the one path by which the API, `npm run approvals` and the run console decide. It
// checks the decision (an edit against the tool's schema), records it once in the store, and wakes the parked job
// when none of its calls waits any more. Who decided comes from the caller's credentials, never from a body.
import { InputError } from '../kernel/errors.js';
import { scrubText } from '../logging/redact.js';
import type { FieldIssue } from '../queue/field-issue.js';
import { formatFieldIssues } from '../queue/task-schema.js';
import { withTimeout } from '../util/with-timeout.js';
import type { Approval, ApprovalState } from './approval.js';
import type { ApprovalFilter, ApprovalStore } from './approval-store.js';
import { checkDecision, checkEdit } from './decision-check.js';

export type { ApprovalFilter } from './approval-store.js';

export interface DecisionInput {
  decision: 'approve' | 'reject';
  reason?: string;
  /** Only with approve: the arguments the call runs with instead, checked against the tool's schema. */
  arguments?: Record<string, unknown>;
  /** The name of the credentials deciding (`<token name>`, `console:<user>`, `shell:<user>`). */
  by: string;
}

export type DecisionOutcome =
  | { kind: 'decided'; approval: Approval }
  /** Decided before (or expired): the first decision stands and is returned (HTTP 409). */
  | { kind: 'conflict'; approval: Approval }
  | { kind: 'not_found' }
  /** The decision or an edit refused, each issue naming its field (`arguments.to`) (HTTP 400). */
  | { kind: 'invalid'; issues: FieldIssue[] };

export interface BatchDecisionInput {
  batchId: string;
  tool: string;
  decision: 'approve' | 'reject';
  reason?: string;
  by: string;
}

/** Where the desk tells of what failed after a decision was recorded (a wake, an event): logged, not thrown. */
export interface DeskLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Where `approval.decided` goes: ApprovalEvents (agent-events), or anything that takes the decided approval. */
export interface DecidedEvents {
  decided(approval: Approval): Promise<void>;
}

export interface ApprovalDeskOptions {
  store: ApprovalStore;
  /** Brings a parked job back now (wakeParkedJob on the tasks queue). */
  wake: (jobId: string) => Promise<unknown>;
  /** `approval.decided` goes out here after each decision, when given. */
  events?: DecidedEvents;
  /** Epoch ms; default Date.now. */
  now?: () => number;
  logger?: DeskLogger;
  /**
   * How long the wake and the event may each take after a decision is recorded (default 5,000 ms): with Redis
   * away they would wait for it indefinitely, and the decider is owed an answer; the job wakes at its expiry.
   */
  followUpTimeoutMs?: number;
}

/** A batch-wide decision refused before anything was decided; `issues` name the fields. */
export class InvalidDecisionError extends InputError {
  override readonly name = 'InvalidDecisionError';
  constructor(readonly issues: FieldIssue[]) {
    super('invalid_decision', formatFieldIssues(issues));
  }
}

/** Decisions of a batch-wide call made at once (each a conditional UPDATE of its own). */
const BATCH_CONCURRENCY = 8;

export class ApprovalDesk {
  private readonly store: ApprovalStore;
  private readonly wake: (jobId: string) => Promise<unknown>;
  private readonly events: DecidedEvents | undefined;
  private readonly now: () => number;
  private readonly logger: DeskLogger | undefined;
  private readonly followUpTimeoutMs: number;

  constructor(options: ApprovalDeskOptions) {
    this.store = options.store;
    this.wake = options.wake;
    this.events = options.events;
    this.now = options.now ?? Date.now;
    this.logger = options.logger;
    this.followUpTimeoutMs = options.followUpTimeoutMs ?? 5_000;
  }

  /** Expires what is due first: a caller never sees as pending a call that can no longer be decided. */
  async list(filter: ApprovalFilter = {}): Promise<Approval[]> {
    await this.expireDue();
    return this.store.list(filter);
  }

  async get(id: string): Promise<Approval | null> {
    await this.expireDue();
    return this.store.get(id);
  }

  /** A batch's calls by state (a batch with one pending is not complete). */
  async countsForBatch(batchId: string): Promise<Record<ApprovalState, number>> {
    await this.expireDue();
    return this.store.countsForBatch(batchId);
  }

  /**
   * Checks the decision, records it once, then (when none of the job's calls waits any more) wakes the job and
   * publishes `approval.decided`. A decision made before, or an expiry, stands: `conflict` returns it.
   */
  async decide(id: string, input: DecisionInput): Promise<DecisionOutcome> {
    const checked = checkDecision(input);
    if (!checked.ok) return { kind: 'invalid', issues: checked.issues };
    const { decision, by, reason, arguments: edited } = checked.decision;
    if (edited !== undefined) {
      // The edit is checked only for a call still waiting: a decided one answers with its decision.
      const approval = await this.store.get(id);
      if (!approval) return { kind: 'not_found' };
      if (approval.state !== 'pending') return { kind: 'conflict', approval };
      const issues = checkEdit(await this.store.argumentsSchemaOf(id), edited);
      if (issues.length > 0) return { kind: 'invalid', issues };
    }
    const now = this.date();
    const result = await this.store.decide(id, { decision, by, reason, editedArguments: edited }, now);
    if (result === 'not_found') return { kind: 'not_found' };
    const approval = await this.store.get(id);
    if (!approval) return { kind: 'not_found' };
    if (result === 'conflict') {
      // Expired just now, by this decision's look: told like every expiry (an event sent twice is kept once).
      if (approval.state === 'expired') await this.publishDecided([approval]);
      return { kind: 'conflict', approval };
    }
    await this.afterDecision(approval, now);
    return { kind: 'decided', approval };
  }

  /**
   * Decides every call of the batch's tasks to `tool` that waits now, as `decide` would one by one (each
   * recorded once, each job woken when its last call is decided). `conflicts`: calls decided by someone else
   * (or expired) meanwhile. Throws InvalidDecisionError before deciding anything when the input is refused.
   */
  async decideBatch(input: BatchDecisionInput): Promise<{ decided: Approval[]; conflicts: number }> {
    const issues = batchIssues(input);
    const checked = checkDecision({ decision: input.decision, reason: input.reason, by: input.by });
    if (!checked.ok) issues.push(...checked.issues);
    if (issues.length > 0) throw new InvalidDecisionError(issues);
    await this.expireDue();
    const waiting = (await this.store.forBatch(input.batchId)).filter(
      (approval) => approval.state === 'pending' && approval.tool === input.tool,
    );
    const decided: Approval[] = [];
    let conflicts = 0;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < waiting.length) {
        const { id } = waiting[next++]!;
        const outcome = await this.decide(id, {
          decision: input.decision,
          reason: input.reason,
          by: input.by,
        });
        if (outcome.kind === 'decided') decided.push(outcome.approval);
        else conflicts++;
      }
    };
    await Promise.all(Array.from({ length: Math.min(BATCH_CONCURRENCY, waiting.length) }, worker));
    return { decided, conflicts };
  }

  /**
   * The decision is recorded: what follows must not undo that answer. A failed wake or event is logged; the
   * job wakes at its earliest expiry anyway and the worker reads the decisions then.
   */
  private async afterDecision(approval: Approval, now: Date): Promise<void> {
    try {
      // A call of the job past its expiry waits no more: expired, it does not hold the wake back.
      await this.expireDue(approval.jobId, now);
      if ((await this.store.pendingCount(approval.jobId)) === 0)
        await withTimeout(this.wake(approval.jobId), this.followUpTimeoutMs);
    } catch (error) {
      this.warn(error, approval, 'approval decided, but waking its job failed (it wakes at its expiry)');
    }
    try {
      if (this.events) await withTimeout(this.events.decided(approval), this.followUpTimeoutMs);
    } catch (error) {
      this.warn(error, approval, 'approval decided, but its approval.decided event was not published');
    }
  }

  /** Expires what is due (of one job, or all), and tells agent-events: an expiry is a decision nobody made. */
  private async expireDue(jobId?: string, now: Date = this.date()): Promise<void> {
    await this.publishDecided(await this.store.expireDue(now, jobId));
  }

  private async publishDecided(approvals: readonly Approval[]): Promise<void> {
    if (!this.events) return;
    for (const approval of approvals) {
      try {
        await withTimeout(this.events.decided(approval), this.followUpTimeoutMs);
      } catch (error) {
        this.warn(error, approval, 'approval expired, but its approval.decided event was not published');
      }
    }
  }

  private warn(error: unknown, approval: Approval, message: string): void {
    const reason = error instanceof Error ? error.message : String(error);
    this.logger?.warn({ approvalId: approval.id, jobId: approval.jobId, err: scrubText(reason) }, message);
  }

  private date(): Date {
    return new Date(this.now());
  }
}

function batchIssues(input: BatchDecisionInput): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (typeof input.batchId !== 'string' || input.batchId === '')
    issues.push({ path: 'batchId', message: 'required: the batch whose calls are decided' });
  if (typeof input.tool !== 'string' || input.tool === '')
    issues.push({ path: 'tool', message: 'required: the tool whose calls are decided' });
  return issues;
}
