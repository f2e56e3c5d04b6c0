// Builds the ChatModel a job asks for, from the endpoint configuration of the process: OpenAI or an
// OpenAI-compatible endpoint (OPENAI_BASE_URL), or Azure OpenAI (AZURE_OPENAI_ENDPOINT); over Chat Completions or
// the Responses API, as the job's agent or LLM_API says. One client per model and API.
import { ConfigError } from '../kernel/errors.js';
import type { Env } from '../../config/env.js';
import type { ChatModel, ModelApi } from '../kernel/chat-model.js';
import type { OpenAIClientOptions } from '../llm/openai-client.js';
import { OpenAIChatModel } from '../llm/openai-chat-model.js';
import { OpenAIResponsesModel } from '../llm/openai-responses-model.js';

/** Throws at start when no endpoint can be reached: OpenAI and Azure need a key; a custom endpoint may not. */
export function modelFactoryFrom(env: Env): (model: string, api: ModelApi) => ChatModel {
  const endpointFor = env.AZURE_OPENAI_ENDPOINT
    ? azureEndpoint(env, env.AZURE_OPENAI_ENDPOINT)
    : openAIEndpoint(env);
  const models = new Map<string, ChatModel>();
  return (model, api) => {
    const key = `${api}\u0000${model}`;
    let chat = models.get(key);
    if (!chat) {
      const options = { model, ...endpointFor(model) };
      chat = api === 'responses' ? new OpenAIResponsesModel(options) : new OpenAIChatModel(options);
      models.set(key, chat);
    }
    return chat;
  };
}

function openAIEndpoint(env: Env): (model: string) => OpenAIClientOptions {
  if (!env.OPENAI_API_KEY && !env.OPENAI_BASE_URL) {
    throw new ConfigError(
      'no_model_endpoint',
      'OPENAI_API_KEY is not set (and no OPENAI_BASE_URL): the worker has no model to call. Set it, or run `npm run demo` for the offline demo.',
    );
  }
  const apiKey = env.OPENAI_API_KEY ?? 'none';
  const baseURL = env.OPENAI_BASE_URL;
  return () => ({ apiKey, ...(baseURL ? { baseURL } : {}) });
}

/** Azure OpenAI: the deployment AZURE_OPENAI_DEPLOYMENT names, or one named like each model. */
function azureEndpoint(env: Env, endpoint: string): (model: string) => OpenAIClientOptions {
  const apiKey = env.AZURE_OPENAI_API_KEY;
  if (!apiKey) {
    throw new ConfigError(
      'no_model_endpoint',
      'AZURE_OPENAI_ENDPOINT is set but AZURE_OPENAI_API_KEY is not: the worker cannot call the Azure deployment.',
    );
  }
  const apiVersion = env.AZURE_OPENAI_API_VERSION;
  return (model) => ({
    apiKey,
    azure: { endpoint, apiVersion, deployment: env.AZURE_OPENAI_DEPLOYMENT ?? model },
  });
}
