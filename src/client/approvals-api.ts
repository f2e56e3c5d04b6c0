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

export type ApprovalView = z.infer<typeof approvalSchema>;

export interface FleetApprovalsOptions {
  /** The API's base URL, e.g. http://127.0.0.1:3100. */
  url: string;
  /** API_TOKEN or one of API_TOKENS: decisions are recorded under its name. */
  token: string;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
}

export interface ApprovalListFilter {
  state?: ApprovalState;
  jobId?: string;
  batchId?: string;
  tool?: string;
  /** 1 to 1,000; default 100. Newest first. */
  limit?: number;
}

/** An answer of the API that is not the one asked for; `code` is its `error` (`unauthorized`, `unavailable`…). */
export class FleetApiError extends Error {
  override readonly name: string = 'FleetApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** 401: no token, or one the API does not know. Nothing was decided. */
export class FleetApiAuthError extends FleetApiError {
  override readonly name = 'FleetApiAuthError';
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

interface ErrorBody {
  error?: unknown;
  message?: unknown;
  issues?: unknown;
}

export class FleetApprovals {
  private readonly base: string;
  private readonly token: string;
  private readonly fetch: typeof fetch;

  constructor(options: FleetApprovalsOptions) {
    this.base = options.url.replace(/\/+$/, '');
    this.token = options.token;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  async list(filter: ApprovalListFilter = {}): Promise<ApprovalView[]> {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(filter)) if (value !== undefined) query.set(key, String(value));
    const text = query.toString();
    const body = await this.request('GET', `/v1/approvals${text ? `?${text}` : ''}`);
    return answerOf(approvalListSchema, body).approvals;
  }

  async get(id: string): Promise<ApprovalView> {
    return answerOf(approvalSchema, await this.request('GET', `/v1/approvals/${encodeURIComponent(id)}`));
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
    const body = await this.request('POST', `/v1/batches/${encodeURIComponent(batchId)}/approvals`, {
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
      await this.request('POST', `/v1/approvals/${encodeURIComponent(id)}`, body),
    );
  }

  private async request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.token}`,
      accept: 'application/json',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await this.fetch(`${this.base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer: unknown = await response.json().catch(() => null);
    if (response.ok) return answer;
    throw errorOf(response.status, answer, `${method} ${path}`);
  }
}

/** A successful answer in the shape the API documents, or a FleetApiError (`bad_response`) saying where not. */
function answerOf<T extends z.ZodType>(schema: T, answer: unknown): z.output<T> {
  const parsed = schema.safeParse(answer);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.join('.') || '(answer)';
  throw new FleetApiError(
    200,
    'bad_response',
    `the API answered an unexpected shape: ${where}: ${issue?.message}`,
  );
}

/** The error of a refusal, by status; the message never carries the token. */
function errorOf(status: number, answer: unknown, what: string): FleetApiError {
  const body = (typeof answer === 'object' && answer !== null ? answer : {}) as ErrorBody;
  const code = typeof body.error === 'string' ? body.error : `http_${status}`;
  if (status === 401) return new FleetApiAuthError(status, code, `${what}: the API refused the token (401)`);
  if (status === 404) return new ApprovalNotFoundError(status, code, `${what}: no such approval (404)`);
  if (status === 409) {
    const conflict = approvalConflictSchema.safeParse(answer);
    if (conflict.success) return new ApprovalConflictError(conflict.data.approval);
  }
  if (status === 400 && Array.isArray(body.issues))
    return new ApprovalRefusedError(code, body.issues as FieldIssue[]);
  const detail = typeof body.message === 'string' ? `: ${body.message}` : '';
  return new FleetApiError(status, code, `${what}: ${status} ${code}${detail}`);
}
