// The tokens a model call (or a run) used: a module of its own, so that the budget and the pricing both import it
// and not each other.

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /** Part of promptTokens the provider served from its prompt cache (billed at the cached-input price). */
  cachedPromptTokens?: number;
  /** Part of completionTokens the model spent reasoning (billed as completion). */
  reasoningTokens?: number;
  /** Some call's usage is our estimate: the endpoint reported none. */
  estimated?: true;
  /** The part of the tokens above billed at the flex tier (the provider's slower tier at batch prices). */
  flex?: FlexTokens;
}

export interface FlexTokens {
  promptTokens: number;
  cachedPromptTokens: number;
  completionTokens: number;
}
