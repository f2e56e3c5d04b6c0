// Builds the ChatModel a job asks for, from the endpoint configuration of the process: OpenAI or an
// OpenAI-compatible endpoint (OPENAI_BASE_URL), or Azure OpenAI (AZURE_OPENAI_ENDPOINT); over Chat Completions or
// the Responses API, as the job's agent or LLM_API says. One client per model and API.
import { ConfigError } from '../kernel/errors.js';
import type { Env } from '../../config/env.js';
import type { ChatModel, ModelApi } from '../kernel/chat-model.js';
import type { OpenAIClientOptions } from '../llm/openai-client.js';
import { OpenAIChatModel } from '../llm/openai-chat-model.js';
import { OpenAIResponsesModel } from '../llm/openai-responses-model.js';
import { OpenAIEmbeddings } from '../llm/openai-embeddings.js';
import { embeddingPriceOf } from '../llm/price-table.js';
import { NoteEmbedder } from '../notes/note-embedder.js';

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

/**
 * The embedder of notes NOTES_EMBEDDING_MODEL names (docs/notes.md#embeddings): the endpoint's `/v1/embeddings`
 * through the same client, base URL and key as the model calls (on Azure, the deployment named like the model), at
 * its price (refused at start when it has none). Null when unset: notes are found by FULLTEXT.
 */
export function noteEmbedderFrom(env: Env): NoteEmbedder | null {
  const model = env.NOTES_EMBEDDING_MODEL;
  if (!model) return null;
  const price = embeddingPriceOf(model, env.LLM_PRICES_FILE);
  // On Azure, the embedding model's own deployment (named like it), not the chat deployment.
  const options: OpenAIClientOptions = env.AZURE_OPENAI_ENDPOINT
    ? {
        ...azureEndpoint(env, env.AZURE_OPENAI_ENDPOINT)(model),
        azure: {
          endpoint: env.AZURE_OPENAI_ENDPOINT,
          apiVersion: env.AZURE_OPENAI_API_VERSION,
          deployment: model,
        },
      }
    : openAIEndpoint(env)(model);
  const client = new OpenAIEmbeddings(model, options);
  return new NoteEmbedder(client, {
    model,
    inputPerMillion: price.inputPerMillion,
    ...(options.apiKey ? { secret: options.apiKey } : {}),
  });
}
