// Approvals for other services, over the HTTP API (docs/http-api.md#approvals) with the global fetch: list the
// calls that wait, approve or reject them. Unlike FleetClient it needs no Redis, only the API's URL and a token;
// who decided is that token's name. Each refusal of the API is an error of its own, so a caller branches on the
// class, never on a message: a second decision (ApprovalConflictError) carries the first.
import type { z } from 'zod';
import type { FieldIssue } from '../queue/field-issue.js';
import type { ApprovalState } from '../approvals/approval.js';
import {
  approvalConflictSchema,
  approvalListSchema,
  approvalSchema,
  batchDecidedSchema,
} from './approval-schemas.js';
import {
  answerOf,
  FleetApiAuthError,
  FleetApiError,
  FleetApiTransport,
  withQuery,
  type ErrorAnswer,
  type FleetApiOptions,
} from './fleet-api.js';

// Where they were first declared: importers of this file keep finding them here.
export { FleetApiAuthError, FleetApiError };

export type ApprovalView = z.infer<typeof approvalSchema>;

/** API_TOKEN or one of API_TOKENS as `token`: decisions are recorded under its name. */
export type FleetApprovalsOptions = FleetApiOptions;

export interface ApprovalListFilter {
  state?: ApprovalState;
  jobId?: string;
  batchId?: string;
  tool?: string;
  /** 1 to 1,000; default 100. Newest first. */
  limit?: number;
}

/** 404: no approval with that id. */
export class ApprovalNotFoundError extends FleetApiError {
  override readonly name = 'ApprovalNotFoundError';
}

/** 409: decided before (or expired); `approval` is the first decision, which stands. */
export class ApprovalConflictError extends FleetApiError {
  override readonly name = 'ApprovalConflictError';
  constructor(readonly approval: ApprovalView) {
    super(409, 'already_decided', `approval ${approval.id} is already ${approval.state}`);
  }
}

/** 400: the decision refused, `issues` naming each field (`arguments.to`). Nothing was decided. */
export class ApprovalRefusedError extends FleetApiError {
  override readonly name = 'ApprovalRefusedError';
  constructor(
    code: string,
    readonly issues: FieldIssue[],
  ) {
    super(
      400,
      code,
      `refused: ${issues.map((issue) => `${issue.path || '(body)'}: ${issue.message}`).join('; ')}`,
    );
  }
}

export class FleetApprovals {
  private readonly api: FleetApiTransport;

  constructor(options: FleetApprovalsOptions) {
    this.api = new FleetApiTransport(options, refusalOf);
  }

  async list(filter: ApprovalListFilter = {}): Promise<ApprovalView[]> {
    const body = await this.api.request('GET', withQuery('/v1/approvals', filter));
    return answerOf(approvalListSchema, body).approvals;
  }

  async get(id: string): Promise<ApprovalView> {
    return answerOf(approvalSchema, await this.api.request('GET', `/v1/approvals/${encodeURIComponent(id)}`));
  }

  /** `arguments`: run the call with these instead (checked against the tool's schema). */
  async approve(
    id: string,
    options: { reason?: string; arguments?: Record<string, unknown> } = {},
  ): Promise<ApprovalView> {
    return this.decide(id, { decision: 'approve', ...options });
  }

  /** The model is told `rejected by <token name>: <reason>`. */
  async reject(id: string, options: { reason: string }): Promise<ApprovalView> {
    return this.decide(id, { decision: 'reject', reason: options.reason });
  }

  /** One decision on every call of `tool` waiting in the batch; `conflicts`: calls decided meanwhile by others. */
  async decideBatch(
    batchId: string,
    tool: string,
    decision: 'approve' | 'reject',
    reason?: string,
  ): Promise<{ decided: ApprovalView[]; conflicts: number }> {
    const body = await this.api.request('POST', `/v1/batches/${encodeURIComponent(batchId)}/approvals`, {
      tool,
      decision,
      ...(reason === undefined ? {} : { reason }),
    });
    const { decided, conflicts } = answerOf(batchDecidedSchema, body);
    return { decided, conflicts };
  }

  private async decide(id: string, body: Record<string, unknown>): Promise<ApprovalView> {
    return answerOf(
      approvalSchema,
      await this.api.request('POST', `/v1/approvals/${encodeURIComponent(id)}`, body),
    );
  }
}

/** The approvals routes' own refusals: no such approval, decided before, a refused decision. */
function refusalOf({ status, code, body, issues, what }: ErrorAnswer): FleetApiError | undefined {
  if (status === 404) return new ApprovalNotFoundError(status, code, `${what}: no such approval (404)`);
  if (status === 409) {
    const conflict = approvalConflictSchema.safeParse(body);
    if (conflict.success) return new ApprovalConflictError(conflict.data.approval);
  }
  if (status === 400 && issues) return new ApprovalRefusedError(code, issues as FieldIssue[]);
  return undefined;
}
