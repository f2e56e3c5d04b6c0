// What a completion says about itself beside its message and usage, whichever API answered: for traces and the
// fleet's rate limits. Fields the endpoint left out, or sent as something other than text, are left out.
import type { ChatCompletion, RateLimitState } from '../kernel/chat-model.js';

export function responseMetadata(
  response: { id?: unknown; model?: unknown; service_tier?: unknown },
  rateLimit: RateLimitState | undefined,
): Pick<ChatCompletion, 'responseId' | 'responseModel' | 'serviceTier' | 'rateLimit'> {
  return {
    ...(typeof response.id === 'string' ? { responseId: response.id } : {}),
    ...(typeof response.model === 'string' ? { responseModel: response.model } : {}),
    ...(typeof response.service_tier === 'string' ? { serviceTier: response.service_tier } : {}),
    ...(rateLimit ? { rateLimit } : {}),
  };
}
