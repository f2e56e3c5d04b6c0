// What the model is shown of its own run, pure. The transcript is the model's: its turns go back exactly as it
// wrote them (an assistant message with its tool calls) and each result as the message that answers its call,
// so the model knows what it did from its own turns and tool output keeps the tool's role, below the user's.
// Only at the limits is anything taken out, keeping every role: old results are cleared in place (the message
// stays and still answers its call), and past that old turns become the model's own summary, an assistant
// message. Design and figures: docs/memory.md.
import { parseJsonReply } from './json-action-parser.js';
import type { AssistantMessage, ChatMessage, ToolMessage } from './messages.js';
import { jsonResultMessage, jsonResultParts } from './protocol-json.js';
import type { TokenCounter } from './tokens.js';
import { truncateChars } from './truncate.js';

/**
 * Where to cut `history` so that at most `window` messages stay, or null when nothing needs folding. The cut only
 * falls at the start of a turn (an assistant message), so a call is never separated from its result. The latest
 * turn always stays whole, even when it alone is longer than the window (many parallel calls).
 */
export function foldCut(history: readonly ChatMessage[], window: number): number | null {
  if (history.length <= window) return null;
  const lastTurnStart = latestTurnStart(history);
  let cut = history.length - window;
  while (cut < history.length && history[cut]?.role !== 'assistant') cut++;
  if (lastTurnStart >= 0) cut = Math.min(cut, lastTurnStart);
  return cut > 0 ? cut : null;
}

/** The index of the latest turn's assistant message, -1 when there is none. */
export function latestTurnStart(history: readonly ChatMessage[]): number {
  for (let i = history.length - 1; i >= 0; i--) if (history[i]?.role === 'assistant') return i;
  return -1;
}

/** What a cleared result says in place of its output: what it was and how to get it back. */
export function clearedResult(tool: string, tokens: number): string {
  return `[cleared to save context: the result of ${tool}, ${tokens} tokens; call it again if needed]`;
}

/**
 * Whether a result is a cleared one: exactly the form above, so a result already cleared is never cleared (or
 * counted) again, while an output that only starts like one (a tool can return any text) is still cleared.
 */
export function isCleared(content: string): boolean {
  return CLEARED.test(content);
}

const CLEARED = /^\[cleared to save context: the result of \S+, \d+ tokens; call it again if needed\]$/;

/** A result that can be cleared: the message's index, and the tools whose output it holds (one but over JSON). */
export interface ClearableResult {
  index: number;
  tools: string[];
}

/**
 * The results in `history[0..end)` that can be cleared, oldest first: tool messages, and over the JSON protocol the
 * result message right after a turn of calls.
 */
export function clearableResults(history: readonly ChatMessage[], end: number): ClearableResult[] {
  const found: ClearableResult[] = [];
  const toolOf = new Map<string, string>();
  for (let i = 0; i < end; i++) {
    const message = history[i]!;
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) toolOf.set(call.id, call.function.name);
    } else if (message.role === 'tool' && !isCleared(message.content)) {
      found.push({ index: i, tools: [toolOf.get(message.tool_call_id) ?? 'a tool'] });
    } else if (message.role === 'user') {
      const tools = jsonTurnTools(history[i - 1]);
      const parts = tools ? jsonResultParts(message.content, tools) : [];
      if (tools && parts[0] !== undefined && !parts.every((part) => part !== undefined && isCleared(part))) {
        found.push({ index: i, tools });
      }
    }
  }
  return found;
}

/** The tools a JSON-protocol turn called, in order (its text is the model's own); null for any other message. */
function jsonTurnTools(message: ChatMessage | undefined): string[] | null {
  if (message?.role !== 'assistant' || message.tool_calls?.length || !message.content) return null;
  const parsed = parseJsonReply(message.content);
  return parsed.kind === 'actions' ? parsed.actions.map((action) => action.tool) : null;
}

/**
 * A result cleared in place, with the tokens its output held: a tool message keeps its call's id; a JSON-protocol
 * result keeps the protocol's framing, each call's output replaced by its own stub.
 */
export function clearResult(
  message: ChatMessage,
  tools: readonly string[],
  count: TokenCounter,
): { message: ChatMessage; tokens: number } {
  if (message.role === 'tool') {
    const tokens = count(message.content);
    return { message: { ...message, content: clearedResult(tools[0]!, tokens) }, tokens };
  }
  const parts = jsonResultParts(message.content ?? '', tools);
  const sizes = parts.map((part) => (part === undefined || isCleared(part) ? 0 : count(part)));
  const stubs = tools.map((tool, i) => {
    const part = parts[i];
    return part !== undefined && isCleared(part) ? part : clearedResult(tool, sizes[i]!);
  });
  const tokens = sizes.reduce((sum, size) => sum + size, 0);
  return { message: { role: 'user', content: jsonResultMessage(tools, stubs) }, tokens };
}

// ---------------------------------------------------------------------------------------------------------
// Summaries: the model's own account of turns taken out of the prompt, sent as an assistant message.

/** How a summary reads in the prompt: the model's own words about its earlier turns. */
export function summaryMessage(summary: string): AssistantMessage {
  return { role: 'assistant', content: `${SUMMARY_HEADING}\n${summary}` };
}

export const SUMMARY_HEADING = 'Summary of my earlier steps:';

const SUMMARY_CALL_CHARS = 600;
const SUMMARY_MAX_CHARS = 2_400;

/**
 * A summary written without a model: the earlier summary's lines, then one line per call of the folded turns, with
 * its arguments (the model's own words) and the size of its result. No result's text: the summary is an assistant
 * message, and tool output never leaves the tool role. Past its cap the oldest lines give way to a marker.
 */
export function deterministicSummary(
  previous: string | null,
  folded: readonly ChatMessage[],
  tokensOf: (message: ChatMessage) => number,
): string {
  // Built newest first and stopped at the cap: the final turn's reserve asks for a summary of the whole transcript
  // before every step, so its cost must stay that of the lines kept, not grow with the run (it was quadratic).
  const kept: string[] = [];
  let length = -1;
  let omitted = false;
  for (const line of linesNewestFirst(previous, folded, tokensOf)) {
    if (kept.length > 0 && length + 1 + line.length > SUMMARY_MAX_CHARS) {
      omitted = true;
      break;
    }
    kept.push(line);
    length += 1 + line.length;
  }
  if (omitted) {
    // The newest lines that fit beside the marker, and always the newest one: it is closest to the current goal.
    const room = SUMMARY_MAX_CHARS - OMITTED_LINE.length - 1;
    while (kept.length > 1 && length > room) length -= kept.pop()!.length + 1;
    kept.push(OMITTED_LINE);
  }
  return kept.reverse().join('\n');
}

const OMITTED_LINE = '- (earlier steps omitted)';

/**
 * The summary's lines, newest first: one per call (and per text the model wrote) of the folded turns, then the
 * earlier summary's. A result's size is only counted for a line that is asked for.
 */
function* linesNewestFirst(
  previous: string | null,
  folded: readonly ChatMessage[],
  tokensOf: (message: ChatMessage) => number,
): Generator<string> {
  const results = new Map<string, ToolMessage>();
  for (let i = folded.length - 1; i >= 0; i--) {
    const message = folded[i]!;
    if (message.role === 'tool') results.set(message.tool_call_id, message);
    if (message.role !== 'assistant') continue;
    const calls = message.tool_calls ?? [];
    for (let c = calls.length - 1; c >= 0; c--) {
      const call = calls[c]!;
      const result = results.get(call.id);
      const size = result && (isCleared(result.content) ? 'cleared' : `${tokensOf(result)} tokens`);
      const args = truncateChars(oneLine(call.function.arguments), SUMMARY_CALL_CHARS);
      yield `- I called ${call.function.name}(${args})${size ? ` → result of ${size}, not kept` : ''}`;
    }
    if (message.content?.trim()) {
      yield `- I wrote: ${truncateChars(oneLine(message.content), SUMMARY_CALL_CHARS)}`;
    }
  }
  if (previous) yield* previousLines(previous).reverse();
}

function previousLines(summary: string): string[] {
  return summary
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => (line.startsWith('- ') ? line : `- ${line}`));
}

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ').trim();

export const SUMMARY_SYSTEM_PROMPT =
  "You compress an AI agent's working memory. Reply in at most 120 words, in two parts: " +
  '"Done:" each action completed with its key results (names, numbers, ids, errors and how they were fixed), ' +
  'and "Goal:" what remains to do for the task. No preamble.';

/** True for the requests the memory sends to write its summary (the scripted model uses it to answer them). */
export function isSummaryRequest(messages: readonly ChatMessage[]): boolean {
  return messages[0]?.role === 'system' && messages[0].content === SUMMARY_SYSTEM_PROMPT;
}

/**
 * The request for a model-written summary: the task, the earlier summary and the turns to fold, in the same
 * roles as the run sent them (their results stay tool messages), then the ask.
 */
export function summaryRequestMessages(
  task: string,
  previous: string | null,
  folded: readonly ChatMessage[],
): ChatMessage[] {
  return [
    { role: 'system', content: SUMMARY_SYSTEM_PROMPT },
    { role: 'user', content: task },
    ...(previous ? [summaryMessage(previous)] : []),
    ...folded,
    { role: 'user', content: 'Summarize the steps above now, as instructed.' },
  ];
}

/**
 * What a run did, from its transcript, for a reader (the deterministic answer of a run that cannot pay for a
 * written one): each call with its arguments and its result, clipped.
 */
export function renderRunForReader(messages: readonly ChatMessage[], maxCharsPerMessage = 600): string {
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
