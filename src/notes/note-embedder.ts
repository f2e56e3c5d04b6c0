// Embeddings of notes and of what a run looks notes up for (docs/notes.md#embeddings), paid by the run: each call's
// worst case is reserved from a purse (the run's budget and the fleet's shared limits) before it is made, and what
// the endpoint reports it cost is settled after. Any failure (the endpoint down, a 4xx, a vector that is not one, no
// money left) answers undefined: the lookup falls back to FULLTEXT, the note is kept without an embedding.
import type { CallCost } from '../kernel/call-gate.js';
import { ModelApiError } from '../kernel/errors.js';
import { CHARGED_WHEN_UNANSWERED } from '../kernel/model-call.js';
import type { SidePurse } from '../kernel/side-spend.js';
import { truncateChars } from '../kernel/truncate.js';

/** What one embedding call answers: the vector and the input tokens the endpoint reported (absent: none reported). */
export interface EmbeddingAnswer {
  vector: unknown;
  promptTokens: number | undefined;
}

/** The endpoint (src/llm/openai-embeddings.ts): one input a call, within the time limit and the signal. */
export interface EmbeddingClient {
  embed(input: string, signal: AbortSignal, timeoutMs: number): Promise<EmbeddingAnswer>;
}

/** Characters of a text embedded at most: a task is cut, a note (500) and a query (500) never are. */
export const EMBED_MAX_CHARS = 2_000;
/** Per embedding call, at most. */
export const EMBED_TIMEOUT_MS = 10_000;
export const MAX_EMBEDDING_DIMENSIONS = 16_384;

/** What the embedder logs: a warning, never the key (the client's error message only). */
export interface EmbedLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface NoteEmbedderOptions {
  model: string;
  /** USD per million input tokens (config/prices.json, `embeddingModels`). */
  inputPerMillion: number;
  timeoutMs?: number;
  /** The endpoint's key: scrubbed from any message logged. */
  secret?: string;
}

export class NoteEmbedder {
  readonly model: string;
  private readonly timeoutMs: number;

  constructor(
    private readonly client: EmbeddingClient,
    private readonly options: NoteEmbedderOptions,
  ) {
    this.model = options.model;
    this.timeoutMs = options.timeoutMs ?? EMBED_TIMEOUT_MS;
  }

  /** What an input costs at this model's price. */
  costOf(tokens: number): number {
    return (tokens * this.options.inputPerMillion) / 1_000_000;
  }

  /**
   * The worst case of embedding `input`: its UTF-8 bytes as tokens (a byte-level BPE token is at least one byte,
   * so no tokenizer counts more), at the input price.
   */
  worstCase(input: string): CallCost {
    const tokens = Buffer.byteLength(input, 'utf8');
    return { tokens, costUsd: this.costOf(tokens) };
  }

  /** The text as it is sent: cut to EMBED_MAX_CHARS, never empty (undefined then: nothing to embed). */
  inputOf(text: string): string | undefined {
    const trimmed = text.trim();
    // Cut plainly (no marker: it would be embedded), never through a surrogate pair.
    let input = trimmed.slice(0, EMBED_MAX_CHARS);
    if (input.length < trimmed.length && /[\uD800-\uDBFF]$/.test(input)) input = input.slice(0, -1);
    return input.length > 0 ? input : undefined;
  }

  /**
   * The embedding of `text`, paid from `purse`; undefined when it cannot be paid or the endpoint fails (logged).
   * The purse is settled with the endpoint's reported tokens (the worst case when it reports none or the call may
   * have been processed unanswered: timed out, cancelled, a garbled body; nothing when the endpoint refused it),
   * never above the worst case reserved.
   */
  async embed(
    text: string,
    purse: SidePurse | undefined,
    signal: AbortSignal,
    log: EmbedLogger,
  ): Promise<number[] | undefined> {
    const input = this.inputOf(text);
    if (input === undefined || purse === undefined || signal.aborted) return undefined;
    const worst = this.worstCase(input);
    let payment;
    try {
      payment = await purse.reserve(worst, signal);
    } catch (err) {
      log.warn(
        { model: this.model, error: this.scrub(err) },
        'could not pay for an embedding: FULLTEXT instead',
      );
      return undefined;
    }
    if (!payment) return undefined;
    if (signal.aborted) {
      // Ended while it waited for the money: nothing was sent.
      await payment.settle({ tokens: 0, costUsd: 0 });
      return undefined;
    }
    let charged: CallCost = { tokens: 0, costUsd: 0 };
    try {
      const answer = await this.client.embed(input, signal, this.timeoutMs);
      const tokens =
        answer.promptTokens !== undefined && Number.isInteger(answer.promptTokens) && answer.promptTokens >= 0
          ? Math.min(answer.promptTokens, worst.tokens)
          : worst.tokens;
      charged = { tokens, costUsd: this.costOf(tokens) };
      const vector = answer.vector;
      if (!isVector(vector)) {
        log.warn({ model: this.model }, 'the embedding endpoint answered no valid vector: FULLTEXT instead');
        return undefined;
      }
      return vector;
    } catch (err) {
      // A call the endpoint may have processed without a readable answer (timed out, cancelled in flight, a body
      // that is no JSON) is charged its worst case, as a model call is: the bill is never lower than the provider's.
      // A refusal (an HTTP error, no connection) cost nothing.
      if (err instanceof ModelApiError && CHARGED_WHEN_UNANSWERED.has(err.code)) charged = worst;
      log.warn({ model: this.model, error: this.scrub(err) }, 'an embedding failed: FULLTEXT instead');
      return undefined;
    } finally {
      await payment.settle(charged);
    }
  }

  private scrub(err: unknown): string {
    const status = (err as { status?: unknown } | null)?.status;
    const message = err instanceof Error ? err.message : String(err);
    const secret = this.options.secret;
    const clean = secret && secret.length >= 4 ? message.split(secret).join('[key]') : message;
    return truncateChars(typeof status === 'number' ? `${status} ${clean}` : clean, 300);
  }
}

function isVector(value: unknown): value is number[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.length <= MAX_EMBEDDING_DIMENSIONS &&
    value.every((x) => typeof x === 'number' && Number.isFinite(x)) &&
    value.some((x) => x !== 0)
  );
}
