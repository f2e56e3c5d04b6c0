// The one thing the kernel needs from an LLM: a single chat completion. Kept tiny so the kernel never
// depends on a vendor SDK; the OpenAI adapter implements it over HTTP.
import type { AssistantMessage, ChatMessage, ResponseFormat, ToolSpec } from '../agent/messages.js';

export interface ChatRequest {
  messages: readonly ChatMessage[];
  /** Function definitions; absent for the JSON-in-text protocol and for final answer turns. */
  tools?: readonly ToolSpec[];
  maxTokens: number;
  temperature: number;
  /** Asks for a reply of this shape (an agent's structured output); absent, any text. */
  responseFormat?: ResponseFormat;
  /** Groups requests sharing a prefix in the provider's prompt cache (`prompt_cache_key`); one per agent. */
  cacheKey?: string;
}

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface ChatCompletion {
  message: AssistantMessage;
  /** As the endpoint reported it; null when it reported none. */
  usage: ChatUsage | null;
  finishReason: string | null;
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
