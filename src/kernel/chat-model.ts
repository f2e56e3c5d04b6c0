// The one thing the kernel needs from an LLM: a single chat completion. Kept tiny so the kernel never
// depends on a vendor SDK; the OpenAI adapter implements it over HTTP.
import type { AssistantMessage, ChatMessage, ResponseFormat, ToolSpec } from './messages.js';

export interface ChatRequest {
  messages: readonly ChatMessage[];
  /** Function definitions; absent for the JSON-in-text protocol and for final answer turns. */
  tools?: readonly ToolSpec[];
  /** The completion limit; for a reasoning model it covers its reasoning too. */
  maxTokens: number;
  /** Not sent to a reasoning model, which refuses any but its default. */
  temperature: number;
  /**
   * Present for a reasoning model (gpt-5 family, o3, o4-mini): the limit goes as `max_completion_tokens`, the
   * temperature is left out, and `effort` goes as `reasoning_effort`.
   */
  reasoning?: { effort?: ReasoningEffort };
  /** Sent as `service_tier` when set. */
  serviceTier?: ServiceTier;
  /** Asks for a reply of this shape (an agent's structured output); absent, any text. */
  responseFormat?: ResponseFormat;
  /** Groups requests sharing a prefix in the provider's prompt cache (`prompt_cache_key`); one per agent. */
  cacheKey?: string;
}

/**
 * How much a reasoning model thinks before it answers. Models take different sets (gpt-5.1 and later take `none`,
 * earlier ones `minimal`; `xhigh` and `max` only the newer ones): a model's price entry lists its own.
 */
export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

/** Every effort the kernel knows, in order. */
export const REASONING_EFFORTS: readonly ReasoningEffort[] = [
  'none',
  'minimal',
  'low',
  'medium',
  'high',
  'xhigh',
  'max',
];

/**
 * Which of the provider's APIs a model is called through: Chat Completions (every OpenAI-compatible endpoint) or
 * the Responses API (OpenAI and Azure OpenAI), which carries a reasoning model's reasoning from call to call.
 */
export type ModelApi = 'chat' | 'responses';

export const MODEL_APIS: readonly ModelApi[] = ['chat', 'responses'];

/** The provider's processing tier: `flex` is slower, at batch prices, and sometimes unavailable. */
export type ServiceTier = 'default' | 'flex';

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  /** Part of promptTokens served from the provider's prompt cache, when it says. */
  cachedPromptTokens?: number;
  /** Part of completionTokens spent reasoning, when it says. */
  reasoningTokens?: number;
}

export interface ChatCompletion {
  message: AssistantMessage;
  /** As the endpoint reported it; null when it reported none. */
  usage: ChatUsage | null;
  finishReason: string | null;
  /** What the endpoint's `x-ratelimit-*` headers said after the call; absent when it sent none. */
  rateLimit?: RateLimitState;
  /** The endpoint's id of the response and the model that answered, when it said (for traces). */
  responseId?: string;
  responseModel?: string;
  /** The tier the provider says it served the call at (`default`, `flex`, …), when it says. */
  serviceTier?: string | null;
}

export interface ChatCallOptions {
  signal: AbortSignal;
  /** The attempt is abandoned after this long. */
  timeoutMs: number;
}

export interface ChatModel {
  /** The model name sent to the endpoint and looked up in the price table. */
  readonly model: string;
  /**
   * One attempt, no retries: the kernel retries, because it must check the budget before every attempt.
   * Throws ModelApiError (classified retryable or not) on failure.
   */
  complete(request: ChatRequest, options: ChatCallOptions): Promise<ChatCompletion>;
}

/** What an endpoint's rate-limit headers said after a call: what is left of its current window. */
export interface RateLimitState {
  limitRequests?: number;
  limitTokens?: number;
  remainingRequests?: number;
  remainingTokens?: number;
  /** How long until the request limit is whole again, in ms. */
  resetRequestsMs?: number;
  resetTokensMs?: number;
}
