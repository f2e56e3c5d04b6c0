// Embeddings through the model endpoint's `/v1/embeddings`, with the same `openai` client (transport, base URL,
// key, Azure route) as the worker's model calls: one input a call, bounded by a time limit and the caller's signal.
// A failure is thrown classified as a model call's is (api-errors.ts): its code says whether it may have been billed.
import type OpenAI from 'openai';
import { classifyApiError } from './api-errors.js';
import type { EmbeddingAnswer, EmbeddingClient } from '../notes/note-embedder.js';
import { createNodeHttpFetch, type Fetch } from './node-http-fetch.js';
import { callSignal, chatCompletionsClient, type OpenAIClientOptions } from './openai-client.js';

/**
 * Bytes an embedding's reply may have: a vector of MAX_EMBEDDING_DIMENSIONS (16,384) floats written out in full is
 * about 0.4 MB. A larger reply is cut off as it arrives (a hostile or broken endpoint), not read whole.
 */
export const EMBEDDING_REPLY_MAX_BYTES = 2 * 1024 * 1024;

let boundedFetch: Fetch | undefined;
/** The worker's transport for embeddings: its own keep-alive pool, replies bounded. */
function embeddingsFetch(): Fetch {
  boundedFetch ??= createNodeHttpFetch({ maxBodyBytes: EMBEDDING_REPLY_MAX_BYTES });
  return boundedFetch;
}

export class OpenAIEmbeddings implements EmbeddingClient {
  private readonly client: OpenAI;

  constructor(
    private readonly model: string,
    options: OpenAIClientOptions,
  ) {
    this.client = chatCompletionsClient({ ...options, fetch: options.fetch ?? embeddingsFetch() });
  }

  async embed(input: string, signal: AbortSignal, timeoutMs: number): Promise<EmbeddingAnswer> {
    const call = callSignal(signal);
    try {
      const response = await this.client.embeddings.create(
        { model: this.model, input, encoding_format: 'float' },
        { signal: call.signal, timeout: timeoutMs, maxRetries: 0 },
      );
      // The body is the endpoint's: any JSON at all (null, a string), read without trusting its shape.
      const answer = response as Partial<typeof response> | null;
      const usage = answer?.usage as { prompt_tokens?: unknown } | undefined;
      return {
        vector: Array.isArray(answer?.data)
          ? (answer.data[0] as { embedding?: unknown } | undefined)?.embedding
          : undefined,
        promptTokens: typeof usage?.prompt_tokens === 'number' ? usage.prompt_tokens : undefined,
      };
    } catch (error) {
      throw classifyApiError(error);
    } finally {
      call.release();
    }
  }
}
