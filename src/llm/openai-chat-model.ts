// ChatModel over the official `openai` client, for any OpenAI-compatible Chat Completions endpoint.
// The client's own retries are off: the kernel retries, checking the budget before each attempt.
import OpenAI, { AzureOpenAI } from 'openai';
import type { AssistantMessage, ToolCallRequest } from '../kernel/messages.js';
import { ModelApiError } from '../kernel/errors.js';
import { scrubText } from '../logging/redact.js';
import type {
  ChatCallOptions,
  ChatCompletion,
  ChatModel,
  ChatRequest,
  ChatUsage,
  RateLimitState,
} from '../kernel/chat-model.js';
import { createNodeHttpFetch, ResponseBodyError, type Fetch } from './node-http-fetch.js';
import { rateLimitStateOf } from './rate-limit-headers.js';

export interface OpenAIChatModelOptions {
  model: string;
  /** Default: the OpenAI API. */
  baseURL?: string;
  apiKey: string;
  /**
   * How the client moves bytes. Default: one keep-alive node:http transport shared by the process, which costs
   * less than half the CPU of the built-in fetch per call (node-http-fetch.ts). `globalThis.fetch` gives the
   * client's own default.
   */
  fetch?: Fetch;
  /** Azure OpenAI: the resource's endpoint, API version and deployment; the key goes as `api-key`. */
  azure?: { endpoint: string; apiVersion: string; deployment: string };
}

// The client's telemetry headers (`x-stainless-os`, `-arch`, `-runtime`, ... 8 of a request's 13): nothing the
// API needs, and each is built, copied, sorted for the client's debug log and written on every call. The fleet's
// own transport leaves them off as it writes the request (node-http-fetch.ts); for a fetch given here, null
// removes a header the client would add (which costs the client more work than the header itself).
const WITHOUT_TELEMETRY_HEADERS: Record<string, null> = Object.fromEntries(
  [
    'X-Stainless-Arch',
    'X-Stainless-Lang',
    'X-Stainless-OS',
    'X-Stainless-Package-Version',
    'X-Stainless-Retry-Count',
    'X-Stainless-Runtime',
    'X-Stainless-Runtime-Version',
    'X-Stainless-Timeout',
  ].map((name) => [name, null]),
);

let sharedFetch: Fetch | undefined;
function defaultFetch(): Fetch {
  sharedFetch ??= createNodeHttpFetch();
  return sharedFetch;
}

export class OpenAIChatModel implements ChatModel {
  readonly model: string;
  private readonly client: OpenAI;

  constructor(options: OpenAIChatModelOptions) {
    this.model = options.model;
    const fetch = options.fetch ?? defaultFetch();
    const defaultHeaders = options.fetch ? WITHOUT_TELEMETRY_HEADERS : undefined;
    this.client = options.azure
      ? new AzureOpenAI({
          apiKey: options.apiKey,
          endpoint: options.azure.endpoint,
          apiVersion: options.azure.apiVersion,
          deployment: options.azure.deployment,
          maxRetries: 0,
          fetch,
          ...(defaultHeaders ? { defaultHeaders } : {}),
        })
      : new OpenAI({
          apiKey: options.apiKey,
          baseURL: options.baseURL ?? null,
          maxRetries: 0,
          fetch,
          ...(defaultHeaders ? { defaultHeaders } : {}),
        });
  }

  async complete(request: ChatRequest, options: ChatCallOptions): Promise<ChatCompletion> {
    const hasTools = request.tools !== undefined && request.tools.length > 0;
    let response: OpenAI.Chat.Completions.ChatCompletion;
    let rateLimit: RateLimitState | undefined;
    // The client adds an abort listener to the signal it is given and never removes it; a run's signal
    // lives for dozens of calls, so each call gets its own, linked to the run's for the call's duration.
    const call = new AbortController();
    const forward = () => call.abort(options.signal.reason);
    if (options.signal.aborted) forward();
    else options.signal.addEventListener('abort', forward, { once: true });
    try {
      const pending = this.client.chat.completions.create(
        {
          model: this.model,
          messages: request.messages as OpenAI.Chat.Completions.ChatCompletionMessageParam[],
          ...(request.reasoning
            ? {
                max_completion_tokens: request.maxTokens,
                ...(request.reasoning.effort ? { reasoning_effort: request.reasoning.effort } : {}),
              }
            : { max_tokens: request.maxTokens, temperature: request.temperature }),
          ...(request.serviceTier ? { service_tier: request.serviceTier } : {}),
          ...(request.cacheKey ? { prompt_cache_key: request.cacheKey } : {}),
          ...(hasTools
            ? {
                tools: request.tools as OpenAI.Chat.Completions.ChatCompletionTool[],
                parallel_tool_calls: true,
              }
            : {}),
          ...(request.responseFormat
            ? {
                response_format:
                  request.responseFormat as OpenAI.Chat.Completions.ChatCompletionCreateParams['response_format'],
              }
            : {}),
        },
        { signal: call.signal, timeout: options.timeoutMs, maxRetries: 0 },
      );
      // With the HTTP response, for its rate-limit headers.
      const answer = await pending.withResponse();
      response = answer.data;
      rateLimit = rateLimitStateOf(answer.response.headers);
    } catch (error) {
      const classified = classifyApiError(error);
      throw request.serviceTier === 'flex' && isFlexUnavailable(error, classified)
        ? new ModelApiError('flex_unavailable', classified.message, {
            retryable: true,
            status: 429,
            cause: error,
          })
        : classified;
    } finally {
      options.signal.removeEventListener('abort', forward);
    }
    const choice = response.choices?.[0];
    if (!choice?.message) {
      throw new ModelApiError('empty_response', 'The model endpoint returned no choices.', {
        retryable: true,
      });
    }
    const message: AssistantMessage = { role: 'assistant', content: choice.message.content ?? null };
    const toolCalls = (choice.message.tool_calls ?? []).filter((call) => call.type === 'function');
    if (toolCalls.length > 0) {
      message.tool_calls = toolCalls.map((call): ToolCallRequest => ({
        id: call.id,
        type: 'function',
        function: { name: call.function.name, arguments: call.function.arguments },
      }));
    }
    const usage = response.usage ? usageOf(response.usage) : null;
    return {
      message,
      usage,
      finishReason: choice.finish_reason ?? null,
      ...(typeof response.id === 'string' ? { responseId: response.id } : {}),
      ...(typeof response.model === 'string' ? { responseModel: response.model } : {}),
      ...(typeof response.service_tier === 'string' ? { serviceTier: response.service_tier } : {}),
      ...(rateLimit ? { rateLimit } : {}),
    };
  }
}

/** The endpoint's counts, held to sense: whole non-negative numbers, the parts no larger than their totals. */
function usageOf(reported: OpenAI.CompletionUsage): ChatUsage {
  const promptTokens = count(reported.prompt_tokens, Number.MAX_SAFE_INTEGER);
  const completionTokens = count(reported.completion_tokens, Number.MAX_SAFE_INTEGER);
  const cached = count(reported.prompt_tokens_details?.cached_tokens, promptTokens);
  const reasoning = count(reported.completion_tokens_details?.reasoning_tokens, completionTokens);
  return {
    promptTokens,
    completionTokens,
    ...(cached > 0 ? { cachedPromptTokens: cached } : {}),
    ...(reasoning > 0 ? { reasoningTokens: reasoning } : {}),
  };
}

function count(value: unknown, max: number): number {
  return typeof value === 'number' && Number.isFinite(value)
    ? Math.min(max, Math.max(0, Math.floor(value)))
    : 0;
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
