// The models a worker's runs call, each behind the fleet's rate limits: the endpoint's x-ratelimit-* headers
// pause the whole fleet before it answers 429. One per model and API, shared by every run of the process.
import type { ChatModel, ModelApi } from '../kernel/chat-model.js';
import type { RateLimiter } from '../fleet/rate-limiter.js';
import { withProviderRateLimits } from '../fleet/provider-rate-limits.js';
import type { Logger } from '../logging/logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';

export function limitedModels(
  createModel: (model: string, api: ModelApi) => ChatModel,
  limiter: Pick<RateLimiter, 'pause'>,
  metrics: FleetMetrics,
  logger: Logger,
): (model: string, api: ModelApi) => ChatModel {
  const models = new Map<string, ChatModel>();
  return (model, api) => {
    const key = `${api}\u0000${model}`;
    let chat = models.get(key);
    if (!chat) {
      chat = withProviderRateLimits(createModel(model, api), {
        pause: (ms) => limiter.pause(ms),
        onSlowDown: (ms, state) => {
          metrics.observeRatePause(model, 'headers');
          logger.debug({ pauseMs: ms, ...state }, 'endpoint rate-limit headers: pausing the fleet');
        },
        onError: (err) => logger.warn({ err }, 'could not pause the fleet'),
      });
      models.set(key, chat);
    }
    return chat;
  };
}
