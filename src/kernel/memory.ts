// The sliding-window memory, pure. The system prompt and the task are pinned; the most recent messages stay
// verbatim; older ones are folded into one rolling summary. The cut only falls at the start of a turn (an
// assistant message), so a tool call is never separated from its result: the API rejects a `tool` message
// whose call is gone, and the model would lose what answered what.
import { truncateChars } from './truncate.js';
import type { ChatMessage } from './messages.js';

/**
 * Where to cut `history` so that at most `window` messages stay, or null when nothing needs folding.
 * The latest turn always stays whole, even when it alone is longer than the window (many parallel calls).
 */
export function foldCut(history: readonly ChatMessage[], window: number): number | null {
  if (history.length <= window) return null;
  const lastTurnStart = findLastIndex(history, (m) => m.role === 'assistant');
  let cut = history.length - window;
  while (cut < history.length && history[cut]?.role !== 'assistant') cut++;
  if (lastTurnStart >= 0) cut = Math.min(cut, lastTurnStart);
  return cut > 0 ? cut : null;
}

/** One line per message, clipped: the material the summary is written from. */
export function renderForSummary(messages: readonly ChatMessage[], maxCharsPerMessage = 600): string {
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role === 'assistant') {
      if (message.content) lines.push(`assistant: ${truncateChars(message.content, maxCharsPerMessage)}`);
      for (const call of message.tool_calls ?? []) {
        lines.push(
          `call ${call.function.name}(${truncateChars(call.function.arguments, maxCharsPerMessage)})`,
        );
      }
    } else if (message.role === 'tool') {
      lines.push(`result: ${truncateChars(message.content, maxCharsPerMessage)}`);
    } else {
      lines.push(`${message.role}: ${truncateChars(message.content, maxCharsPerMessage)}`);
    }
  }
  return lines.join('\n');
}

const DETERMINISTIC_LINE_CHARS = 240;
const DETERMINISTIC_MAX_CHARS = 2400;

/**
 * A summary written without a model: the earlier summary's actions plus one line per folded message. Used
 * when the folded part is too small to be worth a model call, the budget is tight, or the call fails.
 */
export function deterministicSummary(previous: string | null, folded: readonly ChatMessage[]): string {
  const earlier = previous ? extractDoneLines(previous) : [];
  const fresh = folded
    .map((message) =>
      renderForSummary([message], DETERMINISTIC_LINE_CHARS)
        .replace(/\s*\n\s*/g, ' ')
        .trim(),
    )
    .filter((line) => line.length > 0)
    .map((line) => `- ${line}`);
  const lines = [...earlier, ...fresh];
  // Keep the newest lines when the summary outgrows its cap: they are closest to the current goal.
  let text = lines.join('\n');
  while (text.length > DETERMINISTIC_MAX_CHARS && lines.length > 1) {
    lines.shift();
    text = `- (earlier actions omitted)\n${lines.join('\n')}`;
  }
  return `Done so far:\n${text}\nCurrent goal: finish the task above without repeating completed actions.`;
}

function extractDoneLines(summary: string): string[] {
  // The goal of an earlier summary is stale: only its record of what was done carries over.
  const body = summary
    .replace(/^Done so far:\n/, '')
    .replace(/\nCurrent goal:[\s\S]*$/, '')
    .replace(/\bGoal:[\s\S]*$/, '');
  return body
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => (line.startsWith('- ') ? line : `- ${line}`));
}

export const SUMMARY_SYSTEM_PROMPT =
  "You compress an AI agent's working memory. Reply in at most 120 words, in two parts: " +
  '"Done:" each action completed with its key results (names, numbers, ids, errors and how they were fixed), ' +
  'and "Goal:" what remains to do for the task. No preamble.';

/** True for the requests the memory sends to write its summary (the scripted model uses it to answer them). */
export function isSummaryRequest(messages: readonly ChatMessage[]): boolean {
  return messages[0]?.role === 'system' && messages[0].content === SUMMARY_SYSTEM_PROMPT;
}

export function summaryRequestMessages(
  task: string,
  previous: string | null,
  folded: readonly ChatMessage[],
): ChatMessage[] {
  const parts = [`Task: ${task}`];
  if (previous) parts.push(`Summary so far:\n${previous}`);
  parts.push(`Messages to fold in:\n${renderForSummary(folded)}`);
  return [
    { role: 'system', content: SUMMARY_SYSTEM_PROMPT },
    { role: 'user', content: parts.join('\n\n') },
  ];
}

function findLastIndex<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (predicate(items[i] as T)) return i;
  return -1;
}

// ---------------------------------------------------------------------------------------------------------
// The cache-aware memory (AGENT_MEMORY_WINDOW=auto, the default). Providers cache the longest prefix a prompt
// shares with recent ones and bill it at a fraction of the input price, so the prompt is laid out to only
// ever grow at its end: the system prompt, the task, then blocks of facts, each written once and never
// changed, then the turns still kept verbatim. A finished turn becomes facts (which call, with which
// arguments, and its whole result): the call's request text and framing go, every result stays. A block is
// appended after the blocks before it, so what the provider cached of the last prompt stays cached.

/** What a call of a finished turn did: the material of its fact. */
export interface TurnCall {
  tool: string;
  args: unknown;
  output: string;
}

const FACT_ARG_CHARS = 80;

/**
 * Of a text of several lines (an email's body), a fact keeps its first words and its length: the rest is what
 * the model wrote itself, and every later prompt would carry it.
 */
const FACT_PROSE_CHARS = 20;

/**
 * A string argument as a fact names it: whole when short; a long line (a query) by its start and its end, where
 * a WHERE clause or a name usually is; a long text of several lines by its start and its length.
 */
function abbreviate(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= FACT_ARG_CHARS) return flat;
  if (/\n/.test(text.trim())) return `${flat.slice(0, FACT_PROSE_CHARS)}… (${text.length} chars)`;
  const head = Math.ceil(FACT_ARG_CHARS * 0.55);
  const tail = FACT_ARG_CHARS - head;
  return `${flat.slice(0, head)}…${flat.slice(-tail)}`;
}

function abbreviateArgs(args: unknown): unknown {
  if (typeof args === 'string') return abbreviate(args);
  if (Array.isArray(args)) return args.map(abbreviateArgs);
  if (args && typeof args === 'object') {
    return Object.fromEntries(Object.entries(args).map(([key, value]) => [key, abbreviateArgs(value)]));
  }
  return args;
}

export const FACTS_HEADER = 'Tool results so far:';

/**
 * A call's arguments as a fact names them: `key=value` (strings quoted only when they need it, long ones
 * abbreviated), without the braces and quotes of JSON; anything but an object as its (abbreviated) JSON. A
 * string the call's `output` quotes whole is left out (`to=` of a `Sent to …` result): the result names it.
 */
export function renderFactArgs(args: unknown, output = ''): string {
  if (!args || typeof args !== 'object' || Array.isArray(args)) {
    return JSON.stringify(abbreviateArgs(args) ?? null);
  }
  return Object.entries(args)
    .filter(([, value]) => !shownByOutput(value, output))
    .map(([key, value]) => {
      const short = abbreviateArgs(value);
      const text = typeof short === 'string' && /^[\w@.:/+-]+$/.test(short) ? short : JSON.stringify(short);
      return `${key}=${text}`;
    })
    .join(' ');
}

/** A string argument at least this long that the result quotes whole (`to=` of `Sent to …`) is not repeated. */
const SHOWN_ARG_MIN_CHARS = 8;

function shownByOutput(value: unknown, output: string): boolean {
  if (typeof value !== 'string' || value.length < SHOWN_ARG_MIN_CHARS) return false;
  // Quoted whole, not inside a longer name or number (ORD-1001 in ORD-10010, bob@ in jimbob@): that one is
  // another order, customer or file, and the result would not say which the call asked for.
  // Past each occurrence, not one character on: a long argument the result repeats is searched in linear time.
  for (let at = output.indexOf(value); at !== -1; at = output.indexOf(value, at + value.length)) {
    if (!JOINS_A_NAME.test(output[at - 1] ?? '') && !JOINS_A_NAME.test(output[at + value.length] ?? '')) {
      return true;
    }
  }
  return false;
}

/** A character that would make the text around a quote one longer name or number. */
const JOINS_A_NAME = /^[\p{L}\p{N}_@]$/u;

/** Outputs this long or longer that a fact already shows are named, not repeated. */
const SAME_OUTPUT_MIN_CHARS = 40;

/**
 * The facts of one turn: one entry per call, its output whole (already cut to the tool-result limit), or, when
 * `shownAt` finds the very same output in an earlier fact (a lookup repeated, the same error again), a
 * reference to that fact.
 */
export function turnFacts(
  step: number,
  calls: readonly TurnCall[],
  shownAt: (output: string) => number | undefined = () => undefined,
): string {
  const seen = new Map<string, string>();
  return calls
    .map((call, i) => {
      const args = renderFactArgs(call.args, call.output);
      const label = args ? `#${step} ${call.tool} ${args}` : `#${step} ${call.tool}`;
      const earlier = call.output.length >= SAME_OUTPUT_MIN_CHARS ? shownAt(call.output) : undefined;
      const inTurn = seen.get(call.output);
      seen.set(call.output, `#${step}.${i + 1}`);
      if (earlier !== undefined) return `${label}\n(the same result as #${earlier})`;
      if (inTurn !== undefined && call.output.length >= SAME_OUTPUT_MIN_CHARS)
        return `${label}\n(the same result as ${inTurn})`;
      return `${label}\n${call.output}`;
    })
    .join('\n');
}

/** The step of the first fact in `facts` showing exactly `output`, if any. */
export function factShowing(facts: readonly string[], output: string): number | undefined {
  for (const block of facts) {
    for (const fact of parseFacts(`${FACTS_HEADER}\n${block}`)) if (fact.output === output) return fact.step;
  }
  return undefined;
}

/** The fact of a turn whose reply was no valid action: what was wrong, briefly. */
export function invalidTurnFact(step: number, observation: string): string {
  return `#${step} (no valid action: ${truncateChars(observation.replace(/\s+/g, ' '), 160)})`;
}

/** A block of facts as the prompt carries it. */
export function factsMessage(facts: readonly string[]): ChatMessage {
  return { role: 'user', content: `${FACTS_HEADER}\n${facts.join('\n')}` };
}

export interface ParsedFact {
  step: number;
  tool: string;
  args: string;
  output: string;
}

/** The facts of a facts message, for readers of the conversation (scripted models); [] for any other text. */
export function parseFacts(content: string): ParsedFact[] {
  if (!content.startsWith(FACTS_HEADER)) return [];
  const facts: ParsedFact[] = [];
  for (const line of content.slice(FACTS_HEADER.length + 1).split('\n')) {
    const header = /^#(\d+) (\S+)(?: (.*))?$/.exec(line);
    const last = facts.at(-1);
    if (header && !header[2]!.startsWith('(')) {
      facts.push({ step: Number(header[1]), tool: header[2]!, args: header[3] ?? '', output: '' });
    } else if (last && !/^#\d+ \(/.test(line)) {
      last.output = last.output ? `${last.output}\n${line}` : line;
    }
  }
  return facts;
}

/** Provider caching: prompts shorter than this are never cached; hits come in steps of the increment. */
export const CACHE_MIN_TOKENS = 1_024;
export const CACHE_INCREMENT_TOKENS = 128;

export interface FoldPrices {
  inputPerMillion: number;
  /** The cached-input price; the input price when the model has none (then folding never loses a discount). */
  cachedInputPerMillion: number;
}

export interface FoldChoice {
  /** Tokens of the messages that would be folded (verbatim, as sent). */
  verbatimTokens: number;
  /** Tokens of the facts message that would replace them. */
  factsTokens: number;
  /** Tokens of the prompt before them (system, task, earlier facts): the part that stays cached either way. */
  prefixTokens: number;
  /** Whether the verbatim messages were part of the last prompt sent (then the provider may hold them). */
  sentBefore: boolean;
  /** Model calls expected after this one that will carry the same prefix. */
  laterCalls: number;
}

/**
 * Whether folding pays, in dollars at the model's prices: folding changes the prompt where the folded
 * messages start, so the next call pays full input price from there on (the cache hits a changed prefix
 * loses), and every later call pays for the facts instead of the longer verbatim text.
 */
export function foldPays(choice: FoldChoice, prices: FoldPrices): boolean {
  const saved = choice.verbatimTokens - choice.factsTokens;
  if (saved <= 0) return false;
  const input = prices.inputPerMillion;
  const cached = Math.min(prices.cachedInputPerMillion, input);
  const cacheable = (tokens: number) => tokens >= CACHE_MIN_TOKENS;
  // The next call: kept, the verbatim part is served from the cache (when it was sent and the prompt is long
  // enough); folded, the facts are new to the provider.
  const keptRate =
    choice.sentBefore && cacheable(choice.prefixTokens + choice.verbatimTokens) ? cached : input;
  const next = choice.factsTokens * input - choice.verbatimTokens * keptRate;
  // Each later call carries `saved` tokens less, mostly from the cache once the prompt is long enough.
  const laterRate = cacheable(choice.prefixTokens + choice.factsTokens) ? cached : input;
  return next + Math.max(0, choice.laterCalls) * -saved * laterRate < 0;
}

/**
 * What a model reading the prompt has been told its calls returned, oldest first: tool messages, the JSON
 * protocol's result messages, and the results kept as facts. For readers of the conversation (scripted models).
 */
export function observationsIn(messages: readonly ChatMessage[]): string[] {
  const seen: string[] = [];
  for (const message of messages.slice(2)) {
    if (message.role === 'tool') seen.push(message.content);
    else if (message.role === 'user' && message.content.startsWith(FACTS_HEADER)) {
      for (const fact of parseFacts(message.content)) seen.push(fact.output);
    } else if (message.role === 'user' && message.content.startsWith('Result')) seen.push(message.content);
  }
  return seen;
}

/**
 * How many turns of tool calls a model reading the prompt sees it has made: its assistant messages and the
 * steps its facts name. For readers of the conversation (scripted models).
 */
export function turnsIn(messages: readonly ChatMessage[]): number {
  let turns = 0;
  for (const message of messages) {
    if (message.role === 'assistant') turns++;
    else if (message.role === 'user' && message.content.startsWith(FACTS_HEADER)) {
      turns += new Set(parseFacts(message.content).map((fact) => fact.step)).size;
    }
  }
  return turns;
}
