// The provider's prompt caching, as OpenAI documents it, for the scripted server: a prompt of at least 1,024
// tokens is served from the cache up to the longest prefix it shares with a prompt seen before (in steps of
// 128 tokens, never below 1,024), among the prompts routed to the same cache: same `prompt_cache_key` (when
// the request names one) and same first 256 tokens. An entry not used for `ttlMs` is gone (the docs say 5 to
// 10 minutes of inactivity). Tests and the benchmark see the cache hits and misses a layout earns.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { ChatMessage, ResponseFormat, ToolSpec } from '../kernel/messages.js';

export const CACHE_MIN_TOKENS = 1_024;
export const CACHE_INCREMENT_TOKENS = 128;
/** Tokens of the prompt's start that route it to a cache (with the key). */
export const CACHE_ROUTING_TOKENS = 256;
export const DEFAULT_CACHE_TTL_MS = 5 * 60_000;
/** Prompts kept per cache: the newest, enough for a run's steps and a few runs sharing a prefix. */
const PROMPTS_PER_CACHE = 64;

export interface PromptCacheOptions {
  /** An entry unused this long is evicted. Default 5 minutes. */
  ttlMs?: number;
  now?: () => number;
}

export interface CachedPrompt {
  /** The request's `tools`, `response_format` and messages, in the order the provider renders them. */
  tools?: readonly ToolSpec[];
  responseFormat?: ResponseFormat;
  messages: readonly ChatMessage[];
  /** `prompt_cache_key`, when the request sent one. */
  cacheKey?: string;
  model: string;
}

interface Entry {
  tokens: Uint32Array;
  usedAt: number;
}

type Encode = (text: string) => number[];
const loadEncoding = createRequire(import.meta.url);
const encoders = new Map<string, Encode>();

function encoderFor(model: string): Encode {
  // The same choice of encoding as the token counter (src/kernel/tokens.ts).
  const name = /^(ft:)?(gpt-4o|gpt-4\.1|gpt-5|o\d)/.test(model) ? 'o200k_base' : 'cl100k_base';
  let encode = encoders.get(name);
  if (!encode) {
    const module = loadEncoding(`gpt-tokenizer/encoding/${name}`) as { encode: Encode };
    encode = (text) => module.encode(text);
    encoders.set(name, encode);
  }
  return encode;
}

/**
 * The prompt as one token sequence: each part (the tool definitions, the response format, each message) is
 * encoded on its own, so a token never spans two parts, and a part changed anywhere breaks the prefix there.
 */
export function promptTokenSequence(prompt: CachedPrompt): Uint32Array {
  const encode = encoderFor(prompt.model);
  const parts: string[] = [];
  if (prompt.tools && prompt.tools.length > 0) parts.push(`<tools>${JSON.stringify(prompt.tools)}`);
  if (prompt.responseFormat) parts.push(`<format>${JSON.stringify(prompt.responseFormat)}`);
  for (const message of prompt.messages) parts.push(`<${message.role}>${JSON.stringify(message)}`);
  const encoded = parts.map(encode);
  const out = new Uint32Array(encoded.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of encoded) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function commonPrefix(a: Uint32Array, b: Uint32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** What the cache serves of a prompt of `promptTokens` sharing `shared` tokens with an earlier one. */
export function cachedTokensFor(promptTokens: number, shared: number): number {
  if (promptTokens < CACHE_MIN_TOKENS) return 0;
  const served = Math.floor(Math.min(shared, promptTokens) / CACHE_INCREMENT_TOKENS) * CACHE_INCREMENT_TOKENS;
  return served >= CACHE_MIN_TOKENS ? served : 0;
}

export class PromptCacheEmulator {
  private readonly caches = new Map<string, Entry[]>();
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(options: PromptCacheOptions = {}) {
    this.ttlMs = options.ttlMs ?? DEFAULT_CACHE_TTL_MS;
    this.now = options.now ?? Date.now;
  }

  /**
   * The cached tokens of this prompt (reported as `prompt_tokens_details.cached_tokens`), then the prompt is
   * cached for the next ones. `promptTokens` is the count the server reports: cached never exceeds it.
   */
  serve(prompt: CachedPrompt, promptTokens: number): number {
    const tokens = promptTokenSequence(prompt);
    const route = createHash('sha256')
      .update(prompt.cacheKey ?? '')
      .update('\0')
      .update(Buffer.from(tokens.slice(0, CACHE_ROUTING_TOKENS).buffer))
      .digest('hex');
    const now = this.now();
    const live = (this.caches.get(route) ?? []).filter((entry) => now - entry.usedAt < this.ttlMs);
    let shared = 0;
    let best: Entry | undefined;
    for (const entry of live) {
      const length = commonPrefix(entry.tokens, tokens);
      if (length > shared) {
        shared = length;
        best = entry;
      }
    }
    const cached = cachedTokensFor(promptTokens, shared);
    if (cached > 0 && best) best.usedAt = now;
    // Only prompts long enough to be cached are kept, as the provider does.
    if (promptTokens >= CACHE_MIN_TOKENS) live.push({ tokens, usedAt: now });
    this.caches.set(route, live.slice(-PROMPTS_PER_CACHE));
    return cached;
  }

  /** Forgets every cached prompt (a test starting over). */
  clear(): void {
    this.caches.clear();
  }
}
