// The `openai` client both model adapters (Chat Completions, Responses) call through: one transport, no client
// retries (the kernel retries, checking the budget before each attempt), and Azure's routes and key header.
import OpenAI, { AzureOpenAI } from 'openai';
import { createNodeHttpFetch, type Fetch } from './node-http-fetch.js';

export interface OpenAIClientOptions {
  /** Default: the OpenAI API. */
  baseURL?: string;
  apiKey: string;
  /**
   * How the client moves bytes. Default: one keep-alive node:http transport shared by the process, which costs
   * less than half the CPU of the built-in fetch per call (node-http-fetch.ts). `globalThis.fetch` gives the
   * client's own default.
   */
  fetch?: Fetch;
  /** Azure OpenAI: the resource's endpoint, API version and deployment; the key goes as `api-key`. */
  azure?: { endpoint: string; apiVersion: string; deployment: string };
}

// The client's telemetry headers (`x-stainless-os`, `-arch`, `-runtime`, ... 8 of a request's 13): nothing the
// API needs, and each is built, copied, sorted for the client's debug log and written on every call. The fleet's
// own transport leaves them off as it writes the request (node-http-fetch.ts); for a fetch given here, null
// removes a header the client would add (which costs the client more work than the header itself).
const WITHOUT_TELEMETRY_HEADERS: Record<string, null> = Object.fromEntries(
  [
    'X-Stainless-Arch',
    'X-Stainless-Lang',
    'X-Stainless-OS',
    'X-Stainless-Package-Version',
    'X-Stainless-Retry-Count',
    'X-Stainless-Runtime',
    'X-Stainless-Runtime-Version',
    'X-Stainless-Timeout',
  ].map((name) => [name, null]),
);

/**
 * Bytes a model's reply may have, as received and decoded. A real one is far smaller: a completion's output is
 * bounded by max_tokens (a few hundred kB at the largest), a Responses reply adds its reasoning items. An endpoint
 * that sends more (a loop, a bomb) fails the call as a garbled reply, charged and retried like one, instead of
 * filling the worker's memory.
 */
export const MODEL_REPLY_MAX_BYTES = 16 * 1024 * 1024;

let sharedFetch: Fetch | undefined;
function defaultFetch(): Fetch {
  sharedFetch ??= createNodeHttpFetch({ maxBodyBytes: MODEL_REPLY_MAX_BYTES });
  return sharedFetch;
}

/**
 * A client for Chat Completions: on Azure, the deployment's route (`/openai/deployments/{name}/chat/completions`
 * with `api-version`).
 */
export function chatCompletionsClient(options: OpenAIClientOptions): OpenAI {
  const fetch = options.fetch ?? defaultFetch();
  const defaultHeaders = options.fetch ? WITHOUT_TELEMETRY_HEADERS : undefined;
  if (!options.azure) return openAIClient(options.apiKey, options.baseURL, fetch, defaultHeaders);
  return new AzureOpenAI({
    apiKey: options.apiKey,
    endpoint: options.azure.endpoint,
    apiVersion: options.azure.apiVersion,
    deployment: options.azure.deployment,
    maxRetries: 0,
    fetch,
    ...(defaultHeaders ? { defaultHeaders } : {}),
  });
}

/**
 * A client for the Responses API: on Azure, the resource's v1 route (`/openai/v1/responses`, the deployment named
 * as the request's model, the key as `api-key`), which takes no `api-version`.
 */
export function responsesClient(options: OpenAIClientOptions): OpenAI {
  const fetch = options.fetch ?? defaultFetch();
  const defaultHeaders = options.fetch ? WITHOUT_TELEMETRY_HEADERS : undefined;
  if (!options.azure) return openAIClient(options.apiKey, options.baseURL, fetch, defaultHeaders);
  const endpoint = options.azure.endpoint.replace(/\/+$/, '');
  return openAIClient(options.apiKey, `${endpoint}/openai/v1`, fetch, {
    ...defaultHeaders,
    'api-key': options.apiKey,
  });
}

function openAIClient(
  apiKey: string,
  baseURL: string | undefined,
  fetch: Fetch,
  defaultHeaders: Record<string, string | null> | undefined,
): OpenAI {
  return new OpenAI({
    apiKey,
    baseURL: baseURL ?? null,
    maxRetries: 0,
    fetch,
    ...(defaultHeaders ? { defaultHeaders } : {}),
  });
}

/**
 * A signal for one call, linked to the run's for the call's duration: the client adds an abort listener to the
 * signal it is given and never removes it, and a run's signal lives for dozens of calls.
 */
export function callSignal(run: AbortSignal): { signal: AbortSignal; release(): void } {
  const call = new AbortController();
  const forward = () => call.abort(run.reason);
  if (run.aborted) forward();
  else run.addEventListener('abort', forward, { once: true });
  return { signal: call.signal, release: () => run.removeEventListener('abort', forward) };
}
