// The endpoint's own rate limits, read from the `x-ratelimit-*` headers of every reply (ChatCompletion.rateLimit),
// slow the whole fleet before the endpoint answers 429: when what is left would not cover another call like
// the one just made, every worker pauses (the fleet's pause, rate-limiter.ts) until enough is back.
// For tokens, the endpoint refills its window steadily (OpenAI's documented model): the pause lasts as long as
// the missing tokens take to come back at the rate the headers imply, never longer than the full reset.
// For requests, none left means a pause until the reset.
import type { ChatCallOptions, ChatCompletion, ChatModel, ChatRequest } from '../kernel/chat-model.js';
import type { RateLimitState } from '../kernel/chat-model.js';

/** How much bigger the next call of a run is assumed to be than the one just made. */
export const NEXT_CALL_GROWTH = 1.2;

/** Longest pause one reply can ask for: the next reply brings fresh headers anyway. */
export const MAX_HEADER_PAUSE_MS = 60_000;

/**
 * How long the fleet should wait, after a call that needed `needTokens` of the window, before the next one
 * (0: no need to wait).
 */
export function headerPauseMs(state: RateLimitState, needTokens: number): number {
  let pause = 0;
  if (state.remainingRequests !== undefined && state.remainingRequests < 1) {
    pause = Math.max(pause, state.resetRequestsMs ?? 1_000);
  }
  const left = state.remainingTokens;
  if (left !== undefined && left < needTokens) {
    const reset = state.resetTokensMs ?? 1_000;
    const limit = state.limitTokens;
    // What the window is missing comes back within `reset`: the part this call needs comes back proportionally.
    const wait =
      limit !== undefined && limit > left ? Math.ceil(((needTokens - left) * reset) / (limit - left)) : reset;
    pause = Math.max(pause, Math.min(wait, reset));
  }
  return Math.min(pause, MAX_HEADER_PAUSE_MS);
}

export interface ProviderRateLimitOptions {
  /** Pauses the fleet (RateLimiter.pause: never shortens a longer pause already running). */
  pause: (ms: number) => Promise<void>;
  /** Told of every pause the headers asked for. */
  onSlowDown?: (ms: number, state: RateLimitState) => void;
  onError?: (error: unknown) => void;
}

/** The model, with the fleet paused whenever its replies' headers say the endpoint's limits are nearly used. */
export function withProviderRateLimits(model: ChatModel, options: ProviderRateLimitOptions): ChatModel {
  return {
    model: model.model,
    async complete(request: ChatRequest, callOptions: ChatCallOptions): Promise<ChatCompletion> {
      const completion = await model.complete(request, callOptions);
      const state = completion.rateLimit;
      if (state) {
        // The next call of this run sends this prompt, this reply and what the tools return: a fifth more than
        // this call's tokens, and the same completion limit.
        const usage = completion.usage;
        const sent = usage ? usage.promptTokens + usage.completionTokens : 0;
        const need = Math.ceil(sent * NEXT_CALL_GROWTH) + request.maxTokens;
        const ms = headerPauseMs(state, need);
        if (ms > 0) {
          options.onSlowDown?.(ms, state);
          // Waited for: this run's next call must not go out before the pause is in place.
          await options.pause(ms).catch((error: unknown) => options.onError?.(error));
        }
      }
      return completion;
    },
  };
}
