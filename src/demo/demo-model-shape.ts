// How the demo's scripted model answers: shaped as the configured model is at its provider (a reasoning model
// refuses `max_tokens` and a temperature; one of the gpt-5.4 generation takes function tools only at
// `reasoning_effort: none`). One owner, so the demo and the test of the figures the docs quote run alike.
import type { ModelPrice } from '../kernel/pricing.js';

export function demoModelShape(price: ModelPrice): {
  reasoningModel: boolean;
  toolsOnlyWithoutReasoning: boolean;
} {
  return {
    reasoningModel: price.reasoning ?? false,
    toolsOnlyWithoutReasoning: price.reasoningEfforts?.includes('none') ?? false,
  };
}
