// Errors classified by who is at fault, with structured fields, so callers branch on `kind`/`code` and
// never on message text. The worker maps them to retry or fail: only `retryable` errors are retried.

export type ErrorKind = 'config' | 'input' | 'model_api' | 'model_behavior' | 'tool' | 'system';

/** The error of a result (`error` in docs/tasks-and-results.md#the-result), plain JSON. */
export interface RunError {
  kind: ErrorKind;
  code: string;
  message: string;
  retryable: boolean;
}

export abstract class AgentFleetError extends Error {
  abstract readonly kind: ErrorKind;
  readonly code: string;
  readonly retryable: boolean;

  constructor(code: string, message: string, options?: { retryable?: boolean; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options?.retryable ?? false;
  }

  toRunError(): RunError {
    return { kind: this.kind, code: this.code, message: this.message, retryable: this.retryable };
  }
}

/** Bad configuration: unknown model, bad environment value. Fix the config; retrying will not help. */
export class ConfigError extends AgentFleetError {
  override readonly name = 'ConfigError';
  readonly kind = 'config';
}

/** A task or option that breaks its schema. */
export class InputError extends AgentFleetError {
  // Typed as string so a subclass (the client's TaskValidationError) reports its own name.
  override readonly name: string = 'InputError';
  readonly kind = 'input';
}

/** The model endpoint failed: HTTP status, timeout, connection. `retryable` per status (408/409/429/5xx). */
export class ModelApiError extends AgentFleetError {
  override readonly name = 'ModelApiError';
  readonly kind = 'model_api';
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(
    code: string,
    message: string,
    options: { retryable: boolean; status?: number; retryAfterMs?: number; cause?: unknown },
  ) {
    super(code, message, options);
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** The model misbehaved in a way the loop cannot feed back (e.g. it keeps repeating itself). */
export class ModelBehaviorError extends AgentFleetError {
  override readonly name = 'ModelBehaviorError';
  readonly kind = 'model_behavior';
}

/**
 * A tool failed. Tools throw it with `transient: true` for failures worth retrying inside the call
 * (a dropped connection); anything else goes back to the model as an observation at once.
 */
export class ToolError extends AgentFleetError {
  override readonly name = 'ToolError';
  readonly kind = 'tool';
  readonly transient: boolean;

  constructor(code: string, message: string, options?: { transient?: boolean; cause?: unknown }) {
    super(code, message, { cause: options?.cause });
    this.transient = options?.transient ?? false;
  }
}

/** Shorthand for tools: a failure that may pass if tried again. */
export class TransientToolError extends ToolError {
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? 'transient', message, { transient: true, cause: options?.cause });
  }
}

/** The fleet's own machinery failed (Redis, MySQL): not the task's fault; usually worth retrying. */
export class SystemError extends AgentFleetError {
  override readonly name = 'SystemError';
  readonly kind = 'system';
}

/** The store's own failures: a database outage (retry the job later) or a schema problem for an operator. */
export class StoreError extends AgentFleetError {
  override readonly name = 'StoreError';
  readonly kind = 'system';
}

/** Anything unexpected: a bug or an environment failure. */
export function toRunError(error: unknown): RunError {
  if (error instanceof AgentFleetError) return error.toRunError();
  const message = error instanceof Error ? error.message : String(error);
  return { kind: 'system', code: 'unexpected', message, retryable: false };
}
