// ChatModel over the official `openai` client, for any OpenAI-compatible Chat Completions endpoint (local servers
// have only this API; OpenAI and Azure also take the Responses API, openai-responses-model.ts).
import type OpenAI from 'openai';
import type { AssistantMessage, ChatMessage } from '../kernel/messages.js';
import { ModelApiError } from '../kernel/errors.js';
import type {
  ChatCallOptions,
  ChatCompletion,
  ChatModel,
  ChatRequest,
  RateLimitState,
} from '../kernel/chat-model.js';
import { modelCallError } from './api-errors.js';
import { callSignal, chatCompletionsClient, type OpenAIClientOptions } from './openai-client.js';
import { rateLimitStateOf } from './rate-limit-headers.js';
import { replyToolCall } from './reply-tool-call.js';
import { reportedUsage } from './reported-usage.js';
import { responseMetadata } from './response-metadata.js';

export interface OpenAIChatModelOptions extends OpenAIClientOptions {
  model: string;
}

export class OpenAIChatModel implements ChatModel {
  readonly model: string;
  private readonly client: OpenAI;

  constructor(options: OpenAIChatModelOptions) {
    this.model = options.model;
    this.client = chatCompletionsClient(options);
  }

  async complete(request: ChatRequest, options: ChatCallOptions): Promise<ChatCompletion> {
    const hasTools = request.tools !== undefined && request.tools.length > 0;
    let response: OpenAI.Chat.Completions.ChatCompletion;
    let rateLimit: RateLimitState | undefined;
    const call = callSignal(options.signal);
    try {
      const pending = this.client.chat.completions.create(
        {
          model: this.model,
          messages: chatMessagesOf(request.messages),
          ...(request.reasoning
            ? {
                max_completion_tokens: request.maxTokens,
                ...(request.reasoning.effort ? { reasoning_effort: request.reasoning.effort } : {}),
              }
            : { max_tokens: request.maxTokens, temperature: request.temperature }),
          ...(request.serviceTier ? { service_tier: request.serviceTier } : {}),
          ...(request.cacheKey ? { prompt_cache_key: request.cacheKey } : {}),
          ...(hasTools
            ? {
                tools: request.tools as OpenAI.Chat.Completions.ChatCompletionTool[],
                parallel_tool_calls: true,
              }
            : {}),
          ...(request.responseFormat
            ? {
                response_format:
                  request.responseFormat as OpenAI.Chat.Completions.ChatCompletionCreateParams['response_format'],
              }
            : {}),
        },
        { signal: call.signal, timeout: options.timeoutMs, maxRetries: 0 },
      );
      // With the HTTP response, for its rate-limit headers.
      const answer = await pending.withResponse();
      response = answer.data;
      rateLimit = rateLimitStateOf(answer.response.headers);
    } catch (error) {
      throw modelCallError(error, request.serviceTier);
    } finally {
      call.release();
    }
    const choice = response.choices?.[0];
    if (!choice?.message) {
      throw new ModelApiError('empty_response', 'The model endpoint returned no choices.', {
        retryable: true,
      });
    }
    const message: AssistantMessage = { role: 'assistant', content: choice.message.content ?? null };
    const toolCalls = (choice.message.tool_calls ?? []).filter((call) => call.type === 'function');
    if (toolCalls.length > 0) {
      message.tool_calls = toolCalls.map((call) =>
        replyToolCall(call.id, call.function?.name, call.function?.arguments),
      );
    }
    const usage = response.usage
      ? reportedUsage(
          response.usage.prompt_tokens,
          response.usage.completion_tokens,
          response.usage.prompt_tokens_details?.cached_tokens,
          response.usage.completion_tokens_details?.reasoning_tokens,
        )
      : null;
    return {
      message,
      usage,
      finishReason: choice.finish_reason ?? null,
      ...responseMetadata(response, rateLimit),
    };
  }
}

/**
 * The transcript as Chat Completions takes it: a turn that came from the Responses API (a checkpoint of such a run
 * resumed here) goes without the items it came as, which this API does not know and a strict endpoint refuses.
 * The same messages, not copies, when no turn has any.
 */
function chatMessagesOf(
  messages: readonly ChatMessage[],
): OpenAI.Chat.Completions.ChatCompletionMessageParam[] {
  const shaped = messages.some((m) => m.role === 'assistant' && m.items !== undefined)
    ? messages.map((m) => {
        if (m.role !== 'assistant' || m.items === undefined) return m;
        const { items: _items, itemsModel: _model, ...turn } = m;
        return turn;
      })
    : messages;
  return shaped as OpenAI.Chat.Completions.ChatCompletionMessageParam[];
}
