// Embeddings through the model endpoint's `/v1/embeddings`, with the same `openai` client (transport, base URL,
// key, Azure route) as the worker's model calls: one input a call, bounded by a time limit and the caller's signal.
import type OpenAI from 'openai';
import type { EmbeddingAnswer, EmbeddingClient } from '../notes/note-embedder.js';
import { callSignal, chatCompletionsClient, type OpenAIClientOptions } from './openai-client.js';

export class OpenAIEmbeddings implements EmbeddingClient {
  private readonly client: OpenAI;

  constructor(
    private readonly model: string,
    options: OpenAIClientOptions,
  ) {
    this.client = chatCompletionsClient(options);
  }

  async embed(input: string, signal: AbortSignal, timeoutMs: number): Promise<EmbeddingAnswer> {
    const call = callSignal(signal);
    try {
      const response = await this.client.embeddings.create(
        { model: this.model, input, encoding_format: 'float' },
        { signal: call.signal, timeout: timeoutMs, maxRetries: 0 },
      );
      const usage = response.usage as { prompt_tokens?: unknown } | undefined;
      return {
        vector: response.data?.[0]?.embedding,
        promptTokens: typeof usage?.prompt_tokens === 'number' ? usage.prompt_tokens : undefined,
      };
    } finally {
      call.release();
    }
  }
}
