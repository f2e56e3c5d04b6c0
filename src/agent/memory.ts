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
