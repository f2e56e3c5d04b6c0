// The scripted server's `/v1/embeddings` (scripted-model-server.ts): deterministic vectors, a hashed bag of words of
// fixed dimensions (texts that share words are close, by cosine), input tokens counted as the provider counts them
// (cl100k for the text-embedding-3 models), and refusals where the real API refuses: no `model`, no `input`, an
// empty string, an input past the model's context, each a 400 shaped like OpenAI's error. Every request is
// recorded, so a test can compare what a run was billed with the server's own count.
import { createHash } from 'node:crypto';
import { tokenCounterFor } from '../kernel/tokens.js';

export interface ScriptedEmbeddingOptions {
  /** Dimensions of every vector. Default 64. */
  dimensions?: number;
  /** Tokens an input may have at most (8,192 for OpenAI's embedding models). */
  maxInputTokens?: number;
}

/** What the endpoint does instead of answering, until set back to null. */
export type EmbeddingFault =
  /** A 500. */
  | 'server_error'
  /** A 400 (a model the endpoint does not serve). */
  | 'bad_request'
  /** A 200 whose vector is empty, with the usage billed. */
  | 'bad_vector';

export interface RecordedEmbedding {
  index: number;
  model: string | undefined;
  /** The inputs, as sent (a single input as one). */
  input: string[];
  /** The HTTP status answered. */
  status: number;
  /** Input tokens reported (and billed) in a 200; 0 otherwise. */
  promptTokens: number;
  receivedAt: number;
}

export interface EmbeddingAnswer {
  status: number;
  body: unknown;
}

const DEFAULT_DIMENSIONS = 64;
const DEFAULT_MAX_INPUT_TOKENS = 8_192;

function error(message: string, param: string | null, code: string | null = null): EmbeddingAnswer {
  return { status: 400, body: { error: { message, type: 'invalid_request_error', param, code } } };
}

/** The vector of a text: each lower-cased word hashed to a dimension and a sign, the sum normalised. */
export function scriptedEmbedding(text: string, dimensions = DEFAULT_DIMENSIONS): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []) {
    const digest = createHash('sha256').update(word).digest();
    const at = digest.readUInt32BE(0) % dimensions;
    vector[at]! += (digest[4]! & 1) === 0 ? 1 : -1;
  }
  const norm = Math.hypot(...vector);
  // A text without a word still has a vector (the provider never answers an empty one).
  return norm === 0 ? vector.map((_, i) => (i === 0 ? 1 : 0)) : vector.map((x) => x / norm);
}

export class ScriptedEmbeddings {
  readonly requests: RecordedEmbedding[] = [];
  fault: EmbeddingFault | null = null;
  private readonly dimensions: number;
  private readonly maxInputTokens: number;

  constructor(options: ScriptedEmbeddingOptions = {}) {
    this.dimensions = options.dimensions ?? DEFAULT_DIMENSIONS;
    this.maxInputTokens = options.maxInputTokens ?? DEFAULT_MAX_INPUT_TOKENS;
  }

  /** Input tokens the endpoint billed over every request answered. */
  get billedTokens(): number {
    return this.requests.reduce((sum, r) => sum + r.promptTokens, 0);
  }

  answer(body: Record<string, unknown>): EmbeddingAnswer {
    const model = typeof body.model === 'string' ? body.model : undefined;
    const inputs =
      typeof body.input === 'string'
        ? [body.input]
        : Array.isArray(body.input) && body.input.every((x) => typeof x === 'string')
          ? (body.input as string[])
          : undefined;
    const record: RecordedEmbedding = {
      index: this.requests.length,
      model,
      input: inputs ?? [],
      status: 400,
      promptTokens: 0,
      receivedAt: Date.now(),
    };
    this.requests.push(record);
    const answered = this.decide(body, model, inputs, record);
    record.status = answered.status;
    return answered;
  }

  private decide(
    body: Record<string, unknown>,
    model: string | undefined,
    inputs: string[] | undefined,
    record: RecordedEmbedding,
  ): EmbeddingAnswer {
    if (model === undefined || model === '') return error('you must provide a model parameter', null);
    if (body.input === undefined) return error("'input' is a required property", null);
    if (inputs === undefined || inputs.length === 0 || inputs.some((x) => x === ''))
      return error(
        "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
        null,
      );
    if (this.fault === 'server_error')
      return {
        status: 500,
        body: {
          error: {
            message: 'scripted embeddings: internal server error',
            type: 'server_error',
            param: null,
            code: null,
          },
        },
      };
    if (this.fault === 'bad_request')
      return error(
        `The model \`${model}\` does not exist or you do not have access to it.`,
        null,
        'model_not_found',
      );
    const count = tokenCounterFor(model);
    const tokens = inputs.map((text) => count(text));
    const longest = Math.max(...tokens);
    if (longest > this.maxInputTokens)
      return error(
        `This model's maximum context length is ${this.maxInputTokens} tokens, however you requested ${longest} ` +
          `tokens (${longest} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.`,
        null,
      );
    const promptTokens = tokens.reduce((a, b) => a + b, 0);
    record.promptTokens = promptTokens;
    const base64 = body.encoding_format === 'base64';
    const data = inputs.map((text, index) => {
      const vector = this.fault === 'bad_vector' ? [] : scriptedEmbedding(text, this.dimensions);
      return {
        object: 'embedding',
        index,
        embedding: base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector,
      };
    });
    return {
      status: 200,
      body: {
        object: 'list',
        data,
        model,
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
      },
    };
  }
}
