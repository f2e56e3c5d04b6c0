// Token counting for Chat Completions requests, as OpenAI's cookbook documents it: every message costs its
// content plus a fixed overhead, every reply is primed with a few tokens, and tool definitions are sent as
// (roughly) their JSON. The kernel budgets from a bound on it (tool calls framed as endpoints frame them),
// calibrated and with a margin, BEFORE a call; the scripted model server reports this count as usage.
import { createRequire } from 'node:module';
import type { ChatMessage, ResponseFormat, ToolSpec } from './messages.js';

const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_REPLY_PRIMING = 3;
const TOKENS_PER_TOOL_CALL = 4;
const TOKENS_FOR_TOOLS_BLOCK = 12;

export type TokenCounter = (text: string) => number;

type Encoding = 'cl100k_base' | 'o200k_base';

// An encoding's tables take 10 MB (cl100k) and 18 MB (o200k) of heap, and a worker usually needs one: each is
// loaded (synchronously, from the package's CommonJS build) the first time a model asks for it. A smaller live
// heap is less for every major garbage collection to go through.
const loadEncoding = createRequire(import.meta.url);
const counters = new Map<Encoding, TokenCounter>();

// Text is counted as text, special tokens (`<|endoftext|>`) included: endpoints take them so in a message, and
// by default the tokenizer throws on them, which would end a run over a tool result or a reply that quotes one.
// Not scanning each text for them also spares a pass over it.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

function counterOf(encoding: Encoding): TokenCounter {
  let counter = counters.get(encoding);
  if (!counter) {
    const module = loadEncoding(`gpt-tokenizer/encoding/${encoding}`) as {
      countTokens: (text: string, options: typeof PLAIN_TEXT) => number;
    };
    counter = (text) => module.countTokens(text, PLAIN_TEXT);
    counters.set(encoding, counter);
  }
  return counter;
}

/** gpt-4o, gpt-4.1 and the o-series use o200k_base; older GPT-4 models cl100k_base. */
export function tokenCounterFor(model: string): TokenCounter {
  // Fine-tuned models are named `ft:<base>:<org>::<id>`: their base model decides.
  return counterOf(/^(ft:)?(gpt-4o|gpt-4\.1|gpt-5|o\d)/.test(model) ? 'o200k_base' : 'cl100k_base');
}

/**
 * The caches of one counter (a count depends on the encoding), looked up once per call that walks a prompt.
 * Messages in memory are never mutated, so a message's count is computed once per counter however many
 * prompts it appears in: the loop estimates the whole prompt several times a step.
 */
interface CounterCaches {
  /** The four role names: a handful of tokens, but a tokenizer call each for every message. */
  roles: Map<string, number>;
  messages: WeakMap<ChatMessage, number>;
  framing: WeakMap<ChatMessage, number>;
  tools: WeakMap<readonly ToolSpec[], number>;
  /** Texts remembered by value, the long and the short apart: the many short ones never push a long one out. */
  longTexts: RememberedCounts;
  shortTexts: RememberedCounts;
  lines: RememberedCounts;
}

const cachesByCounter = new WeakMap<TokenCounter, CounterCaches>();

function cachesOf(count: TokenCounter): CounterCaches {
  let caches = cachesByCounter.get(count);
  if (!caches) {
    caches = {
      roles: new Map(),
      messages: new WeakMap(),
      framing: new WeakMap(),
      tools: new WeakMap(),
      longTexts: new RememberedCounts(LONG_TEXTS_KEPT, LONG_TEXT_CHARS_KEPT),
      shortTexts: new RememberedCounts(SHORT_TEXTS_KEPT, SHORT_TEXTS_KEPT * LONG_TEXT_CHARS),
      lines: new RememberedCounts(LINES_KEPT, LINE_CHARS_KEPT),
    };
    cachesByCounter.set(count, caches);
  }
  return caches;
}

/**
 * Counts remembered by value, for texts that come back (a system prompt, summary lines). The texts are the
 * model's and the tools' as much as ours, so the map is bounded in entries and in characters, and emptied when
 * either is reached (what comes back is counted and remembered again); a text larger than the whole bound is
 * never kept.
 */
class RememberedCounts {
  private readonly counts = new Map<string, number>();
  private chars = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxChars: number,
  ) {}

  count(text: string, count: TokenCounter): number {
    let tokens = this.counts.get(text);
    if (tokens === undefined) {
      tokens = count(text);
      if (text.length > this.maxChars) return tokens;
      if (this.counts.size >= this.maxEntries || this.chars + text.length > this.maxChars) {
        this.counts.clear();
        this.chars = 0;
      }
      this.counts.set(text, tokens);
      this.chars += text.length;
    }
    return tokens;
  }
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

function roleTokens(role: string, count: TokenCounter, caches: CounterCaches): number {
  let tokens = caches.roles.get(role);
  if (tokens === undefined) {
    tokens = count(role);
    if (ROLES.has(role)) caches.roles.set(role, tokens);
  }
  return tokens;
}

export function countMessageTokens(message: ChatMessage, count: TokenCounter): number {
  return messageTokens(message, count, cachesOf(count));
}

function messageTokens(message: ChatMessage, count: TokenCounter, caches: CounterCaches): number {
  const cached = caches.messages.get(message);
  if (cached !== undefined) return cached;
  let tokens = TOKENS_PER_MESSAGE + roleTokens(message.role, count, caches);
  if (message.content) tokens += countText(message.content, count, caches);
  if (message.role === 'tool') tokens += countText(message.tool_call_id, count, caches);
  if (message.role === 'assistant' && message.tool_calls) {
    for (const call of message.tool_calls)
      tokens += TOKENS_PER_TOOL_CALL + callPartsTokens(call, count, caches);
  }
  caches.messages.set(message, tokens);
  return tokens;
}

// Texts are counted where the loop meets them, and several places meet the same one: a tool's result when it is
// fitted to its token limit and again in every prompt's bound (in a message object of its own), a call's
// arguments in its message's count and in the framing bound, the system prompt in every run, a call's id in its
// message, its result's message and the framing bound, a tool's name in every call of it. Such texts are
// remembered by value: a lookup hashes the text, far cheaper than counting it, short texts included (a call's id
// and name: 4 µs remembered against 10 µs counted, for the three counts of each).
const LONG_TEXT_CHARS = 64;
const LONG_TEXTS_KEPT = 8_192;
export const LONG_TEXT_CHARS_KEPT = 4_000_000;
const SHORT_TEXTS_KEPT = 4_096;

function countText(text: string, count: TokenCounter, caches: CounterCaches): number {
  return (text.length < LONG_TEXT_CHARS ? caches.shortTexts : caches.longTexts).count(text, count);
}

/**
 * `count(text)`, remembered by value with the texts of the messages (see above): for a whole text the loop will
 * put in a message, such as a tool's result before it is fitted to its limit. Not for slices of a longer text,
 * which would keep that text alive while remembered.
 */
export function countRememberedText(text: string, count: TokenCounter): number {
  return countText(text, count, cachesOf(count));
}

/** A tool call's id, name and arguments, as the documented count and the framing bound both charge them. */
function callPartsTokens(call: ToolCallPart, count: TokenCounter, caches: CounterCaches): number {
  return (
    countText(call.id, count, caches) +
    countText(call.function.name, count, caches) +
    countText(call.function.arguments, count, caches)
  );
}

type ToolCallPart = { id: string; function: { name: string; arguments: string } };

// Lines of the deterministic summaries the kernel estimates before every step: each summary is new, its lines
// mostly are not (they describe the same messages step after step).
const LINES_KEPT = 4_096;
const LINE_CHARS_KEPT = 1_000_000;

/**
 * An estimate of a multi-line text's tokens, for budget checks: the tokens of each line (each distinct line
 * counted once per process) plus one per line break. Tokens do not span a line break, but for punctuation merging
 * with it (and, in o200k, with the next line's leading slashes: one more token there), so this is the exact count
 * or slightly above it.
 */
export function estimateTokensByLine(text: string, count: TokenCounter): number {
  return linesEstimate(text, count, cachesOf(count));
}

function linesEstimate(text: string, count: TokenCounter, caches: CounterCaches): number {
  const lines = text.split('\n');
  let tokens = lines.length - 1;
  for (const [i, line] of lines.entries()) {
    tokens += caches.lines.count(line, count);
    // A punctuation piece takes the line break and the next line's leading carriage returns (and, in o200k,
    // slashes) with it, splitting that line's first piece in two: `&#\n/:` is 4 tokens where `&#`, the break and
    // `/:` count 3.
    if (i > 0 && /^[\r/]/.test(line) && PUNCTUATION_END.test(lines[i - 1]!)) tokens += 1;
  }
  return tokens;
}

const PUNCTUATION_END = /[^\s\p{L}\p{N}]$/u;

/**
 * Gives a message the estimate of `estimateTokensByLine` as its count (for this counter), so that prompts holding
 * it are estimated without counting its text: for a message made only to be measured.
 */
export function estimateMessageTokensByLine(message: ChatMessage, count: TokenCounter): number {
  const caches = cachesOf(count);
  // Asked again for the same message (the final turn's reserve is asked more than once a step): its estimate.
  const given = caches.messages.get(message);
  if (given !== undefined) return given;
  const tokens =
    TOKENS_PER_MESSAGE +
    roleTokens(message.role, count, caches) +
    linesEstimate(message.content ?? '', count, caches);
  caches.messages.set(message, tokens);
  return tokens;
}

export function countToolsTokens(tools: readonly ToolSpec[] | undefined, count: TokenCounter): number {
  return toolsTokens(tools, count, cachesOf(count));
}

function toolsTokens(
  tools: readonly ToolSpec[] | undefined,
  count: TokenCounter,
  caches: CounterCaches,
): number {
  if (!tools || tools.length === 0) return 0;
  const cached = caches.tools.get(tools);
  if (cached !== undefined) return cached;
  const tokens = TOKENS_FOR_TOOLS_BLOCK + count(JSON.stringify(tools));
  caches.tools.set(tools, tokens);
  return tokens;
}

/** What a `response_format` adds to a prompt: endpoints put its schema in front of the model. */
export function countResponseFormatTokens(format: ResponseFormat | undefined, count: TokenCounter): number {
  return format ? TOKENS_FOR_TOOLS_BLOCK + count(JSON.stringify(format)) : 0;
}

/** Prompt tokens of a request: messages, tool definitions and the reply priming. */
export function countPromptTokens(
  messages: readonly ChatMessage[],
  tools: readonly ToolSpec[] | undefined,
  count: TokenCounter,
): number {
  const caches = cachesOf(count);
  let tokens = TOKENS_PER_REPLY_PRIMING + toolsTokens(tools, count, caches);
  for (const message of messages) tokens += messageTokens(message, count, caches);
  return tokens;
}

// How an endpoint renders the tool calls of the history is not documented, and it reports more than the count
// above on conversations full of them. Counters fitted to OpenAI's reported usage (openai-chat-tokens,
// totokenizers) charge 7 to 10 tokens to open each call, one between its name and its arguments, and 12 to
// close a message of calls, where the count above charges 4 and the call's id. Other counters (LangChain's)
// and the chat templates of OpenAI-compatible servers take a call as its JSON, keys, quotes and escaped
// arguments included. The budget's bound charges a message of calls the larger of the two.
const TOOL_CALL_OPENING_TOKENS = 10 + 1;
const TOOL_CALLS_CLOSING_TOKENS = 12;

/** What a message may cost beyond its documented count: an endpoint's framing of the tool calls it makes. */
export function toolCallFramingTokens(message: ChatMessage, count: TokenCounter): number {
  return framingTokens(message, count, cachesOf(count));
}

function framingTokens(message: ChatMessage, count: TokenCounter, caches: CounterCaches): number {
  if (message.role !== 'assistant' || !message.tool_calls || message.tool_calls.length === 0) return 0;
  const cache = caches.framing;
  const cached = cache.get(message);
  if (cached !== undefined) return cached;
  let fitted = TOOL_CALLS_CLOSING_TOKENS;
  let serialized = 0;
  for (const call of message.tool_calls) {
    fitted += Math.max(0, TOOL_CALL_OPENING_TOKENS - TOKENS_PER_TOOL_CALL);
    const parts = callPartsTokens(call, count, caches);
    serialized += Math.max(0, count(JSON.stringify(call)) - parts);
  }
  const tokens = Math.max(fitted, serialized);
  cache.set(message, tokens);
  return tokens;
}

/**
 * The prompt tokens to budget for: the documented count, with the tool calls of the history framed as endpoints
 * frame them at the most. Never below `countPromptTokens`.
 */
export function countPromptTokensBound(
  messages: readonly ChatMessage[],
  tools: readonly ToolSpec[] | undefined,
  count: TokenCounter,
): number {
  const caches = cachesOf(count);
  let tokens = TOKENS_PER_REPLY_PRIMING + toolsTokens(tools, count, caches);
  for (const message of messages)
    tokens += messageTokens(message, count, caches) + framingTokens(message, count, caches);
  return tokens;
}

/** Completion tokens of a reply: its text and the tool calls it makes. */
export function countCompletionTokens(
  content: string | null,
  toolCalls: readonly { function: { name: string; arguments: string } }[] | undefined,
  count: TokenCounter,
): number {
  let tokens = content ? count(content) : 0;
  for (const call of toolCalls ?? []) {
    tokens += TOKENS_PER_TOOL_CALL + count(call.function.name) + count(call.function.arguments);
  }
  return tokens;
}
