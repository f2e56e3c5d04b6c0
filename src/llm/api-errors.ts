// What a failed model call means to the kernel: the `openai` client's errors, classified retryable or not and
// scrubbed of credentials, for both adapters (Chat Completions and Responses).
import OpenAI from 'openai';
import { ModelApiError } from '../kernel/errors.js';
import { scrubText } from '../logging/redact.js';
import { ResponseBodyError } from './node-http-fetch.js';

/** The error a call failed with, as the kernel sees it; on the flex tier, a 429 for want of capacity says so. */
export function modelCallError(error: unknown, serviceTier: string | undefined): ModelApiError {
  const classified = classifyApiError(error);
  return serviceTier === 'flex' && isFlexUnavailable(error, classified)
    ? new ModelApiError('flex_unavailable', classified.message, {
        retryable: true,
        status: 429,
        cause: error,
      })
    : classified;
}

/** OpenAI's flex tier answers "429 Resource Unavailable" when it lacks capacity (not charged, not a rate limit). */
function isFlexUnavailable(error: unknown, classified: ModelApiError): boolean {
  if (classified.status !== 429) return false;
  const code = error instanceof OpenAI.APIError ? error.code : undefined;
  return code === 'resource_unavailable' || /resource unavailable/i.test(classified.message);
}

const RETRYABLE_STATUS = new Set([408, 409, 429]);

/**
 * 408/409/429/5xx, timeouts, dropped connections and garbled bodies are worth another attempt. The endpoint's
 * own words are scrubbed of credentials: they become the run's error, stored, published and shown on the board
 * as the job's failedReason, none of which passes the logger.
 */
export function classifyApiError(error: unknown): ModelApiError {
  if (error instanceof ModelApiError) return error;
  if (error instanceof OpenAI.APIUserAbortError) {
    return new ModelApiError('aborted', 'The model call was aborted.', { retryable: false, cause: error });
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError) {
    return new ModelApiError('timeout', 'The model call timed out.', { retryable: true, cause: error });
  }
  const cut = causeOf(error, ResponseBodyError);
  if (cut) {
    // The endpoint answered, then its body was cut or garbled: it may have billed the work, so this is charged
    // like a garbled body (model-call.ts).
    return new ModelApiError(
      'malformed_response',
      `The model endpoint's reply could not be read: ${scrubText(cut.message)}`,
      {
        retryable: true,
        cause: error,
      },
    );
  }
  if (error instanceof OpenAI.APIConnectionError) {
    return new ModelApiError('connection', `Cannot reach the model endpoint: ${scrubText(error.message)}`, {
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    const status = error.status;
    const retryable = RETRYABLE_STATUS.has(status) || status >= 500;
    return new ModelApiError(
      `http_${status}`,
      `The model endpoint answered ${status}: ${scrubText(error.message)}`,
      {
        retryable,
        status,
        retryAfterMs: retryAfterMs(error.headers),
        cause: error,
      },
    );
  }
  if (error instanceof SyntaxError) {
    return new ModelApiError(
      'malformed_response',
      `The model endpoint sent a malformed body: ${scrubText(error.message)}`,
      {
        retryable: true,
        cause: error,
      },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ModelApiError('unknown', `The model call failed: ${scrubText(message)}`, {
    retryable: true,
    cause: error,
  });
}

/** The first error of `type` in the chain of causes, if any. */
function causeOf<T extends Error>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof type) return e;
  }
  return undefined;
}

/** `retry-after-ms` (OpenAI's) or `retry-after` in seconds or as an HTTP date. */
function retryAfterMs(headers: Headers | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = Number(headers.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const value = headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
