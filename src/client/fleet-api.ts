// What the HTTP API's clients (FleetApprovals, FleetNotes) share: a request with the bearer token over the global
// fetch, the errors every route may answer, and the check that an answer has the documented shape. Each client
// turns the refusals of its own routes (404, 409, 400) into errors of its own, so a caller branches on the class,
// never on a message; a message never carries the token.
import type { z } from 'zod';

export interface FleetApiOptions {
  /** The API's base URL, e.g. http://127.0.0.1:3100. */
  url: string;
  /** API_TOKEN or one of API_TOKENS. */
  token: string;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
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

/** 401: no token, or one the API does not know. Nothing was done. */
export class FleetApiAuthError extends FleetApiError {
  override readonly name = 'FleetApiAuthError';
}

/** An error answer as the API documents it: `{error, message?, issues?}`, any part possibly missing. */
export interface ErrorAnswer {
  status: number;
  /** `error`, or `http_<status>` when the answer has none. */
  code: string;
  message?: string;
  issues?: unknown[];
  body: unknown;
  /** `GET /v1/notes/note_…`: what was asked, for messages. */
  what: string;
}

/** A client's own errors for its routes' refusals; undefined for the generic FleetApiError. */
export type Refusal = (answer: ErrorAnswer) => FleetApiError | undefined;

export type Method = 'GET' | 'POST' | 'DELETE';

export class FleetApiTransport {
  private readonly base: string;
  private readonly token: string;
  private readonly fetch: typeof fetch;

  constructor(
    options: FleetApiOptions,
    private readonly refusal: Refusal,
  ) {
    this.base = options.url.replace(/\/+$/, '');
    this.token = options.token;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /** The answer's JSON (null for an answer without a body, such as 204), or the error of the refusal. */
  async request(method: Method, path: string, body?: unknown): Promise<unknown> {
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
    const answer: unknown = response.status === 204 ? null : await response.json().catch(() => null);
    if (response.ok) return answer;
    throw this.errorOf(response.status, answer, `${method} ${path}`);
  }

  private errorOf(status: number, answer: unknown, what: string): FleetApiError {
    const body = (typeof answer === 'object' && answer !== null ? answer : {}) as Record<string, unknown>;
    const code = typeof body['error'] === 'string' ? body['error'] : `http_${status}`;
    const message = typeof body['message'] === 'string' ? body['message'] : undefined;
    const issues = Array.isArray(body['issues']) ? (body['issues'] as unknown[]) : undefined;
    if (status === 401)
      return new FleetApiAuthError(status, code, `${what}: the API refused the token (401)`);
    const own = this.refusal({
      status,
      code,
      body: answer,
      what,
      ...(message === undefined ? {} : { message }),
      ...(issues === undefined ? {} : { issues }),
    });
    if (own) return own;
    return new FleetApiError(status, code, `${what}: ${status} ${code}${message ? `: ${message}` : ''}`);
  }
}

/** A successful answer in the shape the API documents, or a FleetApiError (`bad_response`) saying where not. */
export function answerOf<T extends z.ZodType>(schema: T, answer: unknown): z.output<T> {
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

/** `GET /v1/approvals?state=pending`: the query string of the filter's given values. */
export function withQuery(path: string, filter: object): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(filter)) if (value !== undefined) query.set(key, String(value));
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}
