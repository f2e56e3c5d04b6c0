// ChatModel over the `openai` client's Responses API (`POST /v1/responses`), for OpenAI and Azure OpenAI. Nothing
// is kept at the provider (`store: false`): a reasoning model's reasoning comes back encrypted with each response,
// and the transcript sends it back with the calls it was produced with (responses-input.ts).
import type OpenAI from 'openai';
import type {
  ChatCallOptions,
  ChatCompletion,
  ChatModel,
  ChatRequest,
  RateLimitState,
} from '../kernel/chat-model.js';
import { ModelApiError } from '../kernel/errors.js';
import type { ResponseFormat } from '../kernel/messages.js';
import { modelCallError } from './api-errors.js';
import { malformedReply } from './reply-tool-call.js';
import { callSignal, responsesClient, type OpenAIClientOptions } from './openai-client.js';
import { rateLimitStateOf } from './rate-limit-headers.js';
import { reportedUsage } from './reported-usage.js';
import { responseMetadata } from './response-metadata.js';
import { responsesInputOf } from './responses-input.js';
import { failedResponseError, finishReasonOf, messageOf } from './responses-output.js';

export interface OpenAIResponsesModelOptions extends OpenAIClientOptions {
  model: string;
}

export class OpenAIResponsesModel implements ChatModel {
  readonly model: string;
  /** What the request names as its model: on Azure, the deployment. */
  private readonly requestModel: string;
  private readonly client: OpenAI;

  constructor(options: OpenAIResponsesModelOptions) {
    this.model = options.model;
    this.requestModel = options.azure?.deployment ?? options.model;
    this.client = responsesClient(options);
  }

  async complete(request: ChatRequest, options: ChatCallOptions): Promise<ChatCompletion> {
    let response: OpenAI.Responses.Response;
    let rateLimit: RateLimitState | undefined;
    const call = callSignal(options.signal);
    try {
      // The body is read here, not by the client: its reader walks `output` as OpenAI shapes it, and throws a
      // TypeError on a garbled one, which would read as a failure before any answer (retried, not charged).
      const answer = await this.client.responses
        .create(this.body(request), { signal: call.signal, timeout: options.timeoutMs, maxRetries: 0 })
        .asResponse();
      rateLimit = rateLimitStateOf(answer.headers);
      const body: unknown = await answer.json();
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw malformedReply('a body that is not a response object');
      }
      response = body as OpenAI.Responses.Response;
    } catch (error) {
      throw modelCallError(error, request.serviceTier);
    } finally {
      call.release();
    }
    if (response.status === 'failed') throw failedResponseError(response.error);
    const output = Array.isArray(response.output) ? response.output : [];
    if (output.length === 0 && response.status !== 'incomplete') {
      throw new ModelApiError('empty_response', 'The model endpoint returned no output items.', {
        retryable: true,
      });
    }
    const message = messageOf(output, this.requestModel);
    const usage = response.usage
      ? reportedUsage(
          response.usage.input_tokens,
          response.usage.output_tokens,
          response.usage.input_tokens_details?.cached_tokens,
          response.usage.output_tokens_details?.reasoning_tokens,
        )
      : null;
    return {
      message,
      usage,
      finishReason: finishReasonOf(response, message),
      ...responseMetadata(response, rateLimit),
    };
  }

  private body(request: ChatRequest): OpenAI.Responses.ResponseCreateParamsNonStreaming {
    const { instructions, input } = responsesInputOf(request.messages, this.requestModel);
    const tools = request.tools ?? [];
    return {
      model: this.requestModel,
      ...(instructions === undefined ? {} : { instructions }),
      input: input as OpenAI.Responses.ResponseInput,
      max_output_tokens: request.maxTokens,
      ...(request.reasoning
        ? request.reasoning.effort
          ? { reasoning: { effort: request.reasoning.effort as OpenAI.ReasoningEffort } }
          : {}
        : { temperature: request.temperature }),
      ...(request.serviceTier ? { service_tier: request.serviceTier } : {}),
      ...(request.cacheKey ? { prompt_cache_key: request.cacheKey } : {}),
      ...(tools.length > 0
        ? {
            // Not strict: a tool's schema is checked by the tool itself (Chat Completions' default too).
            tools: tools.map((tool) => ({
              type: 'function' as const,
              name: tool.function.name,
              description: tool.function.description,
              parameters: tool.function.parameters,
              strict: false,
            })),
            parallel_tool_calls: true,
          }
        : {}),
      ...(request.responseFormat ? { text: { format: textFormatOf(request.responseFormat) } } : {}),
      store: false,
      // Only a reasoning model has reasoning to carry; other models refuse the include.
      ...(request.reasoning ? { include: ['reasoning.encrypted_content' as const] } : {}),
    };
  }
}

function textFormatOf(format: ResponseFormat): OpenAI.Responses.ResponseFormatTextConfig {
  return format.type === 'json_object'
    ? { type: 'json_object' }
    : {
        type: 'json_schema',
        name: format.json_schema.name,
        schema: format.json_schema.schema,
        strict: format.json_schema.strict,
      };
}
