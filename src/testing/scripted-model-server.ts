// A scripted OpenAI-compatible Chat Completions endpoint over real HTTP. Tests, the demo and benchmarks drive
// the real `openai` client against it, so retries, timeouts, error classes and header handling are exercised
// exactly as they are against a provider, while every reply is decided by the test.
import { createServer } from 'node:http';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatMessage, ResponseFormat, ToolSpec } from '../kernel/messages.js';
import { countResponseFormatTokens, tokenCounterFor } from '../kernel/tokens.js';
import { fitCompletion } from './completion-budget.js';
import { endpointPromptTokens, type EndpointPromptCounting } from './endpoint-prompt-count.js';
import { PromptCacheEmulator, type PromptCacheOptions } from './prompt-cache-emulator.js';
import { isFault, renderReply } from './scripted-reply.js';
import {
  IssuedReasoning,
  outputItems,
  pairingRefusal,
  reasonsOn,
  responsesRefusal,
  viewOfResponsesRequest,
  wantsEncryptedReasoning,
  type Refusal,
} from './scripted-responses.js';
import { ProviderRateLimits, type ScriptedRateLimits } from './scripted-rate-limits.js';
import { ScriptedEmbeddings, type ScriptedEmbeddingOptions } from './scripted-embeddings.js';
import type { Protocol, ScriptedFault, ScriptedReply } from './scripted-reply.js';

export type { Protocol, ScriptedAction, ScriptedReply } from './scripted-reply.js';
export type { EndpointPromptCounting } from './endpoint-prompt-count.js';
export type { EmbeddingFault, RecordedEmbedding } from './scripted-embeddings.js';

export interface RecordedRequest {
  index: number;
  // Tests assert on whatever field the client sent (temperature, tool_choice, ...), so it stays untyped.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  messages: ChatMessage[];
  tools: ToolSpec[] | undefined;
  /** The request's `response_format`, when it sent one. */
  responseFormat: ResponseFormat | undefined;
  protocol: Protocol;
  /**
   * The API the request came through. A Responses request's `messages`, `tools` and `responseFormat` are its
   * input items, tools and `text.format` read as Chat Completions' shapes (the transcript they stand for), so
   * rules and own-turn readers decide alike over both; `body` is what was sent.
   */
  api: 'chat' | 'responses';
  receivedAt: number;
  /** The request's path and query, e.g. `/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21`. */
  url: string;
  /** The output items a Responses request was answered with, once it was. */
  output?: Record<string, unknown>[];
  /** The usage the server reported, once it sent a completion: the server's own accounting of the call. */
  usage?: {
    promptTokens: number;
    completionTokens: number;
    cachedPromptTokens?: number;
    reasoningTokens?: number;
  };
}

export type ReplyRule = (request: RecordedRequest) => ScriptedReply | undefined;

export interface ScriptedModelOptions {
  script?: ScriptedReply[];
  rules?: ReplyRule[];
  latencyMs?: number;
  apiKey?: string;
  port?: number;
  /** How reported prompt tokens are counted; by default exactly as the documented count. */
  promptCounting?: EndpointPromptCounting;
  /**
   * Answer a request carrying `response_format` with a 400 naming the field, as endpoints without structured
   * outputs do (the request is recorded, no reply of the script is used).
   */
  refuseResponseFormat?: boolean;
  /** The provider's rate limits, with their `x-ratelimit-*` headers and 429s (scripted-rate-limits.ts). */
  rateLimits?: ScriptedRateLimits;
  /**
   * Emulate the provider's prompt caching (prompt-cache-emulator.ts) and report
   * `usage.prompt_tokens_details.cached_tokens`; off by default (no such field is reported).
   */
  promptCache?: boolean | PromptCacheOptions;
  /**
   * Behave as OpenAI's reasoning models (gpt-5 family, o3, o4-mini) do: `max_tokens` and a temperature other than 1
   * are refused with a 400 naming the parameter; `max_completion_tokens` bounds reasoning and output together.
   */
  reasoningModel?: boolean;
  /**
   * With `reasoningModel`, behave as OpenAI's Chat Completions does with gpt-5.4 and later: a request with function
   * tools is refused with a 400 naming `reasoning_effort` unless it says `reasoning_effort: "none"` (these models
   * reason by default, so a request that says nothing is refused too, as gpt-5.5 and later are).
   */
  toolsOnlyWithoutReasoning?: boolean;
  /**
   * Behave as an Azure OpenAI resource: completions only at `/openai/deployments/{deployment}/chat/completions`
   * with an `api-version` query parameter, responses at `/openai/v1/responses` naming a deployment as the model,
   * and the key (when `apiKey` is set) in the `api-key` header.
   */
  azure?: { deployments: readonly string[] };
  /** `POST /v1/embeddings`: its vectors' dimensions and the longest input it takes (scripted-embeddings.ts). */
  embeddings?: ScriptedEmbeddingOptions;
}

export interface ScriptedModelServer {
  /**
   * `POST /v1/embeddings`, always served: its recorded requests (`requests`, each with the tokens it billed), and
   * `fault`, which makes it fail until set back to null.
   */
  readonly embeddings: ScriptedEmbeddings;
  readonly baseURL: string;
  readonly requests: RecordedRequest[];
  readonly failures: string[];
  /** The emulated rate limits, when `rateLimits` was given (`refused` counts their 429s). */
  readonly rateLimits: ProviderRateLimits | undefined;
  /** The emulated prompt cache, when `promptCache` is on. */
  readonly promptCache: PromptCacheEmulator | null;
  /** Replace the script, rules and prompt counting (resets the script cursor, keeps recorded requests). */
  reset(options?: Pick<ScriptedModelOptions, 'script' | 'rules' | 'promptCounting'>): void;
  close(): Promise<void>;
}

const HOST = '127.0.0.1';
const COMPLETION_PATHS = new Set(['/v1/chat/completions', '/chat/completions']);
const RESPONSES_PATHS = new Set(['/v1/responses', '/responses']);
const EMBEDDINGS_PATHS = new Set(['/v1/embeddings', '/embeddings']);
const AZURE_RESPONSES_PATH = '/openai/v1/responses';

class BadRequest extends Error {}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: OutgoingHttpHeaders = {},
): void {
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function errorBody(
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): unknown {
  return { error: { message, type, param, code } };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseRequest(raw: string): {
  body: Record<string, unknown>;
  messages: ChatMessage[];
  tools: ToolSpec[] | undefined;
} {
  const record = parseJsonObject(raw);
  if (!Array.isArray(record.messages)) {
    throw new BadRequest('scripted model: request body has no `messages` array');
  }
  if (record.stream === true) throw new BadRequest('scripted model: `stream: true` is not supported');
  const maxTokens = record.max_completion_tokens ?? record.max_tokens;
  if (
    maxTokens !== undefined &&
    maxTokens !== null &&
    !(Number.isInteger(maxTokens) && (maxTokens as number) > 0)
  ) {
    throw new BadRequest(
      `scripted model: max_tokens must be a positive integer, got ${JSON.stringify(maxTokens)}`,
    );
  }
  const tools =
    Array.isArray(record.tools) && record.tools.length > 0 ? (record.tools as ToolSpec[]) : undefined;
  return { body: record, messages: record.messages as ChatMessage[], tools };
}

/** A request as the server works on it, whichever API it came through. */
interface RequestView {
  body: Record<string, unknown>;
  messages: ChatMessage[];
  tools: ToolSpec[] | undefined;
  responseFormat: ResponseFormat | undefined;
  /** Set when the provider would refuse the request: it is recorded and answered with this. */
  refusal?: Refusal;
}

function chatRequestView(parsed: ReturnType<typeof parseRequest>): RequestView {
  return { ...parsed, responseFormat: parsed.body.response_format as ResponseFormat | undefined };
}

function parseJsonObject(raw: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new BadRequest('scripted model: request body is not valid JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequest('scripted model: request body is not a JSON object');
  }
  return body as Record<string, unknown>;
}

function isJsonObject(text: string | null): boolean {
  try {
    const value: unknown = JSON.parse(text ?? '');
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

const AZURE_ACCESS_DENIED = {
  status: 401,
  message: 'Access denied due to invalid subscription key or wrong API endpoint.',
  code: '401',
};

/** What an Azure OpenAI resource answers a request it does not take, in its words; undefined when it takes it. */
function azureRefusal(
  req: IncomingMessage,
  deployments: readonly string[],
  apiKey: string | undefined,
): { status: number; message: string; code: string } | undefined {
  const url = new URL(req.url ?? '/', 'http://azure.invalid');
  if (req.method === 'POST' && url.pathname === AZURE_RESPONSES_PATH) {
    // The v1 route takes no api-version; the deployment is the request's model, checked once it is read.
    return apiKey !== undefined && req.headers['api-key'] !== apiKey ? AZURE_ACCESS_DENIED : undefined;
  }
  const deployment = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/.exec(url.pathname)?.[1];
  if (req.method !== 'POST' || deployment === undefined)
    return { status: 404, message: 'Resource not found', code: '404' };
  if (!url.searchParams.get('api-version')) {
    return {
      status: 404,
      message: 'Resource not found: the api-version query parameter is required',
      code: '404',
    };
  }
  if (apiKey !== undefined && req.headers['api-key'] !== apiKey) return AZURE_ACCESS_DENIED;
  if (!deployments.includes(decodeURIComponent(deployment))) {
    return {
      status: 404,
      message: 'The API deployment for this resource does not exist.',
      code: 'DeploymentNotFound',
    };
  }
  return undefined;
}

/** The 400 a reasoning model answers a request shaped for older models with, in OpenAI's words. */
function reasoningModelRefusal(
  body: Record<string, unknown>,
  toolsOnlyWithoutReasoning: boolean,
): { message: string; code: string | null; param?: string } | undefined {
  const tools = Array.isArray(body.tools) && body.tools.length > 0;
  if (toolsOnlyWithoutReasoning && tools && body.reasoning_effort !== 'none') {
    const model = typeof body.model === 'string' ? body.model : 'this model';
    return {
      message:
        `Function tools with reasoning_effort are not supported for ${model} in /v1/chat/completions. ` +
        "To use function tools, use /v1/responses or set reasoning_effort to 'none'.",
      code: null,
      param: 'reasoning_effort',
    };
  }
  if (body.max_tokens !== undefined) {
    return {
      message:
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      code: 'unsupported_parameter',
    };
  }
  if (body.temperature !== undefined && body.temperature !== 1) {
    return {
      message: `Unsupported value: 'temperature' does not support ${JSON.stringify(body.temperature)} with this model. Only the default (1) value is supported.`,
      code: 'unsupported_value',
    };
  }
  return undefined;
}

function maxTokensOf(body: Record<string, unknown>): number | undefined {
  const value = body.max_completion_tokens ?? body.max_tokens ?? body.max_output_tokens;
  return typeof value === 'number' ? value : undefined;
}

export async function startScriptedModel(options: ScriptedModelOptions = {}): Promise<ScriptedModelServer> {
  let script = options.script ?? [];
  let rules = options.rules ?? [];
  let promptCounting = options.promptCounting;
  let cursor = 0;
  const limits = options.rateLimits ? new ProviderRateLimits(options.rateLimits) : undefined;
  const promptCache = options.promptCache
    ? new PromptCacheEmulator(options.promptCache === true ? {} : options.promptCache)
    : null;
  const requests: RecordedRequest[] = [];
  const failures: string[] = [];
  const issuedReasoning = new IssuedReasoning();
  const embeddings = new ScriptedEmbeddings(options.embeddings);

  // What a Chat Completions request is refused with, in the provider's words, beyond an unreadable body.
  function chatRefusal(body: Record<string, unknown>): Refusal | undefined {
    if (!options.reasoningModel) return undefined;
    const refused = reasoningModelRefusal(body, options.toolsOnlyWithoutReasoning ?? false);
    return refused && { status: 400, ...refused, param: refused.param ?? null };
  }

  // A Responses request: refused as the provider refuses it, else read as the transcript it stands for.
  function readResponsesRequest(raw: string): RequestView {
    const body = parseJsonObject(raw);
    const unread: RequestView = { body, messages: [], tools: undefined, responseFormat: undefined };
    const refusal = responsesRefusal(body, options.reasoningModel ?? false);
    if (refusal) return { ...unread, refusal };
    const input = Array.isArray(body.input) ? (body.input as Record<string, unknown>[]) : [];
    const model = typeof body.model === 'string' ? body.model : '';
    const missing =
      options.azure && !options.azure.deployments.includes(model)
        ? {
            status: 404,
            message: 'The API deployment for this resource does not exist.',
            code: 'DeploymentNotFound',
            param: null,
          }
        : (pairingRefusal(input) ?? issuedReasoning.check(input, body.store !== false, body.model));
    return missing ? { ...unread, refusal: missing } : { body, ...viewOfResponsesRequest(body) };
  }
  // Pending latency timers and hanging replies; close() cancels them so nothing outlives the server.
  const cancellers = new Set<() => void>();
  let closing: Promise<void> | undefined;

  // A script mistake must not look like a model behaviour the agent then "handles": it is recorded, printed
  // and answered with a 400 that no retry policy swallows.
  function failLoudly(res: ServerResponse, message: string): void {
    failures.push(message);
    process.stderr.write(`${message}\n`);
    sendJson(res, 400, errorBody(message, 'invalid_request_error'));
  }

  // Resolves false when the client went away (or the server closed) first, so a dead request sends nothing.
  function wait(res: ServerResponse, ms: number): Promise<boolean> {
    if (ms <= 0) return Promise.resolve(!res.destroyed);
    return new Promise((resolve) => {
      const cancel = (): void => {
        clearTimeout(timer);
        res.off('close', cancel);
        cancellers.delete(cancel);
        resolve(false);
      };
      const timer = setTimeout(() => {
        res.off('close', cancel);
        cancellers.delete(cancel);
        resolve(!res.destroyed);
      }, ms);
      res.once('close', cancel);
      cancellers.add(cancel);
    });
  }

  function hang(res: ServerResponse): void {
    const release = (): void => {
      cancellers.delete(release);
      res.off('close', release);
      res.destroy();
    };
    res.once('close', release);
    cancellers.add(release);
  }

  function nextReply(request: RecordedRequest): ScriptedReply | undefined {
    if (cursor < script.length) return script[cursor++];
    for (const rule of rules) {
      const reply = rule(request);
      if (reply !== undefined) return reply;
    }
    return undefined;
  }

  function sendFault(res: ServerResponse, fault: ScriptedFault): void {
    switch (fault.fault) {
      case 'rate_limit': {
        const retryAfter = fault.retryAfterSeconds ?? 1;
        sendJson(
          res,
          429,
          errorBody('scripted model: rate limit reached', 'rate_limit_error', 'rate_limit_exceeded'),
          { 'retry-after': String(retryAfter) },
        );
        return;
      }
      case 'server_error':
        sendJson(res, 500, errorBody('scripted model: internal server error', 'server_error'));
        return;
      case 'flex_unavailable':
        // OpenAI's flex tier without capacity: a 429 that is not a rate limit, and is not charged.
        sendJson(
          res,
          429,
          errorBody(
            'Resource Unavailable: the flex tier has no capacity for this request; retry later or use the default tier.',
            'invalid_request_error',
            'resource_unavailable',
          ),
        );
        return;
      case 'bad_request':
        sendJson(
          res,
          400,
          errorBody(fault.message ?? 'scripted model: bad request', 'invalid_request_error'),
        );
        return;
      case 'unauthorized':
        sendJson(
          res,
          401,
          errorBody('scripted model: invalid api key', 'invalid_request_error', 'invalid_api_key'),
        );
        return;
      case 'hang':
        hang(res);
        return;
      case 'malformed_body': {
        const text = '{"id": "x", "choices": [';
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
        return;
      }
    }
  }

  /** A request without the server's key (when it has one) is answered 401, as OpenAI answers it. */
  function keyRefused(req: IncomingMessage, res: ServerResponse): boolean {
    if (options.apiKey === undefined || req.headers.authorization === `Bearer ${options.apiKey}`)
      return false;
    req.resume();
    sendJson(
      res,
      401,
      errorBody('scripted model: invalid api key', 'invalid_request_error', 'invalid_api_key'),
    );
    return true;
  }

  async function serveEmbeddings(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (keyRefused(req, res)) return;
    let body: Record<string, unknown>;
    try {
      body = parseJsonObject(await readBody(req));
    } catch (error) {
      if (error instanceof BadRequest)
        return sendJson(res, 400, errorBody(error.message, 'invalid_request_error'));
      throw error;
    }
    if (!(await wait(res, options.latencyMs ?? 0))) return;
    const answer = embeddings.answer(body);
    sendJson(res, answer.status, answer.body);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const api = RESPONSES_PATHS.has(path) || path === AZURE_RESPONSES_PATH ? 'responses' : 'chat';
    if (!options.azure && req.method === 'POST' && EMBEDDINGS_PATHS.has(path))
      return serveEmbeddings(req, res);
    if (options.azure) {
      const refused = azureRefusal(req, options.azure.deployments, options.apiKey);
      if (refused) {
        req.resume();
        sendJson(res, refused.status, errorBody(refused.message, 'invalid_request_error', refused.code));
        return;
      }
    } else if (req.method !== 'POST' || !(COMPLETION_PATHS.has(path) || RESPONSES_PATHS.has(path))) {
      req.resume();
      sendJson(
        res,
        404,
        errorBody(`scripted model: no route for ${req.method} ${path}`, 'invalid_request_error'),
      );
      return;
    }
    if (!options.azure && keyRefused(req, res)) return;

    const raw = await readBody(req);
    let parsed: RequestView;
    try {
      parsed = api === 'responses' ? readResponsesRequest(raw) : chatRequestView(parseRequest(raw));
    } catch (error) {
      if (error instanceof BadRequest) return failLoudly(res, error.message);
      throw error;
    }
    const { body, messages, tools, responseFormat } = parsed;
    const request: RecordedRequest = {
      index: requests.length,
      body,
      messages,
      tools,
      responseFormat,
      protocol: tools ? 'tools' : 'json',
      api,
      receivedAt: Date.now(),
      url: req.url ?? '',
    };
    // Recorded before the reply is chosen, so a test counting calls also counts the ones that failed.
    requests.push(request);
    const refused = parsed.refusal ?? (api === 'chat' ? chatRefusal(body) : undefined);
    if (refused) {
      sendJson(
        res,
        refused.status,
        errorBody(refused.message, 'invalid_request_error', refused.code, refused.param),
      );
      return;
    }
    if (responseFormat !== undefined && options.refuseResponseFormat) {
      sendJson(
        res,
        400,
        errorBody(
          "scripted model: 'response_format' is not supported by this model",
          'invalid_request_error',
          'unsupported_parameter',
        ),
      );
      return;
    }

    let need = 0;
    if (limits) {
      const counter = tokenCounterFor(typeof body.model === 'string' ? body.model : '');
      need = endpointPromptTokens(messages, tools, counter, promptCounting) + (maxTokensOf(body) ?? 0);
      const admitted = limits.admit(need);
      if (!admitted.ok) {
        sendJson(
          res,
          429,
          errorBody('scripted model: rate limit reached', 'rate_limit_error', 'rate_limit_exceeded'),
          { 'retry-after-ms': String(admitted.retryAfterMs), ...limits.headers() },
        );
        return;
      }
    }
    const reply = nextReply(request);
    if (reply === undefined) {
      return failLoudly(
        res,
        `scripted model: no reply for request #${request.index} ` +
          `(script of ${script.length} replies used up, no rule matched)`,
      );
    }

    if (!(await wait(res, (options.latencyMs ?? 0) + (reply.latencyMs ?? 0)))) return;
    if (isFault(reply)) return sendFault(res, reply);

    const model = typeof body.model === 'string' ? body.model : '';
    const rendered = renderReply(reply, request.protocol, request.index, responseFormat !== undefined);
    // An endpoint held to a response format cannot answer with anything but a JSON object.
    if (responseFormat !== undefined && rendered.toolCalls === undefined && !isJsonObject(rendered.content)) {
      return failLoudly(
        res,
        `scripted model: request #${request.index} asked for a structured reply, ` +
          'but the scripted reply is not a JSON object',
      );
    }
    const {
      reply: fitted,
      completionTokens,
      reasoningTokens,
    } = fitCompletion(rendered, maxTokensOf(body), model, reply.reasoningTokens ?? 0);
    const counter = tokenCounterFor(model);
    const promptTokens =
      endpointPromptTokens(messages, tools, counter, promptCounting) +
      countResponseFormatTokens(responseFormat, counter);
    const cacheKey = typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : undefined;
    const emulated = promptCache?.serve(
      { tools, responseFormat, messages, model, ...(cacheKey === undefined ? {} : { cacheKey }) },
      promptTokens,
    );
    // A scripted figure wins over the emulation's.
    const cachedTokens = Math.min(promptTokens, reply.cachedTokens ?? emulated ?? 0);
    if (reply.usage !== false && !res.destroyed) {
      request.usage = {
        promptTokens,
        completionTokens,
        ...(cachedTokens > 0 || promptCache ? { cachedPromptTokens: cachedTokens } : {}),
        ...(reasoningTokens > 0 ? { reasoningTokens } : {}),
      };
    }
    limits?.settle(need, promptTokens + completionTokens);
    if (api === 'responses') {
      const output = outputItems(
        fitted,
        request.index,
        options.reasoningModel && reasonsOn(body) ? { encrypted: wantsEncryptedReasoning(body) } : undefined,
      );
      issuedReasoning.record(output, body.model);
      request.output = output;
      const cut = fitted.finishReason === 'length';
      sendJson(
        res,
        200,
        {
          id: `resp_scripted_${request.index}`,
          object: 'response',
          created_at: Math.floor(Date.now() / 1000),
          status: cut ? 'incomplete' : 'completed',
          incomplete_details: cut ? { reason: 'max_output_tokens' } : null,
          error: null,
          model: body.model,
          service_tier: body.service_tier === 'flex' ? 'flex' : 'default',
          store: body.store !== false,
          output,
          ...(reply.usage === false
            ? {}
            : {
                usage: {
                  input_tokens: promptTokens,
                  input_tokens_details: { cached_tokens: cachedTokens },
                  output_tokens: completionTokens,
                  output_tokens_details: { reasoning_tokens: reasoningTokens },
                  total_tokens: promptTokens + completionTokens,
                },
              }),
        },
        { 'x-request-id': `req_scripted_${request.index}`, ...limits?.headers() },
      );
      return;
    }
    const message = {
      role: 'assistant',
      content: fitted.content,
      ...(fitted.toolCalls ? { tool_calls: fitted.toolCalls } : {}),
    };
    sendJson(
      res,
      200,
      {
        id: `chatcmpl-scripted-${request.index}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        service_tier: body.service_tier === 'flex' ? 'flex' : 'default',
        choices: [{ index: 0, message, finish_reason: fitted.finishReason, logprobs: null }],
        ...(reply.usage === false
          ? {}
          : {
              usage: {
                prompt_tokens: promptTokens,
                completion_tokens: completionTokens,
                total_tokens: promptTokens + completionTokens,
                ...(cachedTokens > 0 || promptCache
                  ? { prompt_tokens_details: { cached_tokens: cachedTokens } }
                  : {}),
                ...(reasoningTokens > 0
                  ? { completion_tokens_details: { reasoning_tokens: reasoningTokens } }
                  : {}),
              },
            }),
      },
      { 'x-request-id': `req_scripted_${request.index}`, ...limits?.headers() },
    );
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // A client that aborts mid-body is routine; anything else is a bug in the script or the server.
      if (res.destroyed) return;
      const message = `scripted model: internal error: ${error instanceof Error ? error.message : String(error)}`;
      failures.push(message);
      process.stderr.write(`${message}\n`);
      sendJson(res, 500, errorBody(message, 'server_error'));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://${HOST}:${port}/v1`,
    requests,
    embeddings,
    failures,
    rateLimits: limits,
    promptCache,
    reset(next = {}) {
      script = next.script ?? [];
      rules = next.rules ?? [];
      promptCounting = next.promptCounting;
      cursor = 0;
    },
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // Keep-alive sockets and hanging replies would otherwise hold server.close() open forever.
        for (const cancel of [...cancellers]) cancel();
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
