// Builds the ChatModel a job asks for, from the endpoint configuration of the process: OpenAI or an
// OpenAI-compatible endpoint (OPENAI_BASE_URL), or Azure OpenAI (AZURE_OPENAI_ENDPOINT). One client per model.
import { ConfigError } from '../kernel/errors.js';
import type { Env } from '../../config/env.js';
import type { ChatModel } from '../kernel/chat-model.js';
import { OpenAIChatModel } from '../llm/openai-chat-model.js';

/** Throws at start when no endpoint can be reached: OpenAI and Azure need a key; a custom endpoint may not. */
export function modelFactoryFrom(env: Env): (model: string) => ChatModel {
  const create = env.AZURE_OPENAI_ENDPOINT ? azureModels(env, env.AZURE_OPENAI_ENDPOINT) : openAIModels(env);
  const models = new Map<string, ChatModel>();
  return (model) => {
    let chat = models.get(model);
    if (!chat) {
      chat = create(model);
      models.set(model, chat);
    }
    return chat;
  };
}

function openAIModels(env: Env): (model: string) => ChatModel {
  if (!env.OPENAI_API_KEY && !env.OPENAI_BASE_URL) {
    throw new ConfigError(
      'no_model_endpoint',
      'OPENAI_API_KEY is not set (and no OPENAI_BASE_URL): the worker has no model to call. Set it, or run `npm run demo` for the offline demo.',
    );
  }
  const apiKey = env.OPENAI_API_KEY ?? 'none';
  const baseURL = env.OPENAI_BASE_URL;
  return (model) => new OpenAIChatModel({ model, apiKey, ...(baseURL ? { baseURL } : {}) });
}

/** Azure OpenAI: the deployment AZURE_OPENAI_DEPLOYMENT names, or one named like each model. */
function azureModels(env: Env, endpoint: string): (model: string) => ChatModel {
  const apiKey = env.AZURE_OPENAI_API_KEY;
  if (!apiKey) {
    throw new ConfigError(
      'no_model_endpoint',
      'AZURE_OPENAI_ENDPOINT is set but AZURE_OPENAI_API_KEY is not: the worker cannot call the Azure deployment.',
    );
  }
  const apiVersion = env.AZURE_OPENAI_API_VERSION;
  return (model) =>
    new OpenAIChatModel({
      model,
      apiKey,
      azure: { endpoint, apiVersion, deployment: env.AZURE_OPENAI_DEPLOYMENT ?? model },
    });
}
