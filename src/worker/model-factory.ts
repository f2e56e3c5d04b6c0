// Builds the ChatModel a job asks for, from the endpoint configuration of the process.
import { ConfigError } from '../agent/errors.js';
import type { Env } from '../../config/env.js';
import type { ChatModel } from '../llm/chat-model.js';
import { OpenAIChatModel } from '../llm/openai-chat-model.js';

/** Throws at start when no endpoint can be reached: OpenAI needs a key; a custom endpoint may not. */
export function modelFactoryFrom(env: Env): (model: string) => ChatModel {
  if (!env.OPENAI_API_KEY && !env.OPENAI_BASE_URL) {
    throw new ConfigError(
      'no_model_endpoint',
      'OPENAI_API_KEY is not set (and no OPENAI_BASE_URL): the worker has no model to call. Set it, or run `npm run demo` for the offline demo.',
    );
  }
  const apiKey = env.OPENAI_API_KEY ?? 'none';
  const baseURL = env.OPENAI_BASE_URL;
  const models = new Map<string, ChatModel>();
  return (model) => {
    let chat = models.get(model);
    if (!chat) {
      chat = new OpenAIChatModel({ model, apiKey, ...(baseURL ? { baseURL } : {}) });
      models.set(model, chat);
    }
    return chat;
  };
}
