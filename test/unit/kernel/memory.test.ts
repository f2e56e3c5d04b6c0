// The memory's pure parts: where the cut falls (never between a tool call and its result), which results can be
// cleared and how a cleared one reads, the deterministic summary (the model's calls, never a result's text), and
// the summary request (in the roles the run sent).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  clearableResults,
  clearedResult,
  clearResult,
  deterministicSummary,
  foldCut,
  isCleared,
  isSummaryRequest,
  latestTurnStart,
  renderRunForReader,
  SUMMARY_SYSTEM_PROMPT,
  summaryMessage,
  summaryRequestMessages,
} from '../../../src/kernel/memory.js';
import { countMessageTokens, tokenCounterFor } from '../../../src/kernel/tokens.js';
import type { AssistantMessage, ChatMessage, ToolMessage } from '../../../src/kernel/messages.js';

const count = tokenCounterFor('gpt-4o');
const tokens = (message: ChatMessage): number => countMessageTokens(message, count);

let nextId = 0;
function toolTurn(...names: string[]): ChatMessage[] {
  const calls = names.map((name) => ({
    id: `call_${++nextId}`,
    type: 'function' as const,
    function: { name, arguments: JSON.stringify({ n: nextId }) },
  }));
  const assistant: AssistantMessage = { role: 'assistant', content: null, tool_calls: calls };
  const results: ToolMessage[] = calls.map((call) => ({
    role: 'tool',
    tool_call_id: call.id,
    content: `result of ${call.id}`,
  }));
  return [assistant, ...results];
}
const textTurn = (text: string): ChatMessage[] => [
  { role: 'assistant', content: text },
  { role: 'user', content: `observation after ${text}` },
];

describe('foldCut', () => {
  it('returns null when the history fits in the window', () => {
    expect(foldCut([], 4)).toBeNull();
    expect(foldCut([...toolTurn('a'), ...toolTurn('b')], 4)).toBeNull();
  });

  it('cuts at the start of a turn, keeping at most `window` messages', () => {
    const history = [...toolTurn('a'), ...toolTurn('b'), ...toolTurn('c')]; // 6 messages
    expect(foldCut(history, 4)).toBe(2);
    expect(foldCut(history, 3)).toBe(4);
    expect(foldCut(history, 2)).toBe(4);
  });

  it('moves the cut forward rather than split a call from its results', () => {
    const history = [...toolTurn('a', 'b', 'c'), ...textTurn('x')]; // 4 + 2
    // length - window = 1 is a tool result of the first turn: the next turn starts at 4
    expect(foldCut(history, 5)).toBe(4);
  });

  it('keeps the last turn whole even when it alone is longer than the window', () => {
    const history = [...textTurn('x'), ...toolTurn('a', 'b', 'c', 'd')]; // 2 + 5
    expect(foldCut(history, 3)).toBe(2);
  });

  it('returns null when the only turn is longer than the window', () => {
    expect(foldCut(toolTurn('a', 'b', 'c', 'd'), 2)).toBeNull();
  });

  it('folds messages that precede the first turn', () => {
    const history: ChatMessage[] = [{ role: 'user', content: 'leftover' }, ...textTurn('x')];
    expect(foldCut(history, 2)).toBe(1);
  });
});

// ---- property over histories made of whole turns ------------------------------------------------------

const turn: fc.Arbitrary<ChatMessage[]> = fc.oneof(
  fc
    .array(fc.constantFrom('sql_query', 'list_tables', 'describe_table'), { minLength: 1, maxLength: 4 })
    .map((names) => toolTurn(...names)),
  fc.string({ maxLength: 20 }).map(textTurn),
);
const history = fc.array(turn, { minLength: 1, maxLength: 12 });

describe('foldCut (property)', () => {
  it('never separates a call from its results, keeps at most the window unless the last turn is longer', () => {
    fc.assert(
      fc.property(history, fc.integer({ min: 1, max: 12 }), (turns, window) => {
        const messages = turns.flat();
        const starts: number[] = [];
        let position = 0;
        for (const t of turns) {
          starts.push(position);
          position += t.length;
        }
        const lastTurnStart = starts.at(-1) ?? 0;
        const lastTurnLength = turns.at(-1)?.length ?? 0;
        const cut = foldCut(messages, window);
        if (messages.length <= window) {
          expect(cut).toBeNull();
          return;
        }
        if (cut === null) {
          // nothing can be folded: the whole history is one turn
          expect(lastTurnStart).toBe(0);
          expect(lastTurnLength).toBeGreaterThan(window);
          return;
        }
        expect(cut).toBeGreaterThan(0);
        // the cut is a turn start: every tool result kept has its call kept
        expect(starts).toContain(cut);
        expect(messages[cut]?.role).toBe('assistant');
        const kept = messages.slice(cut);
        const keptCallIds = new Set(
          kept.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : [])),
        );
        for (const m of kept) if (m.role === 'tool') expect(keptCallIds.has(m.tool_call_id)).toBe(true);
        if (lastTurnLength > window) {
          expect(cut).toBe(lastTurnStart);
        } else {
          expect(kept.length).toBeLessThanOrEqual(window);
          // and as many as fit: the previous turn start would exceed the window
          const previousStart = starts[starts.indexOf(cut) - 1];
          if (previousStart !== undefined) expect(messages.length - previousStart).toBeGreaterThan(window);
        }
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('renderRunForReader', () => {
  it('renders one line per message, tool calls and results included, clipped', () => {
    const messages: ChatMessage[] = [
      {
        role: 'assistant',
        content: 'thinking',
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'sql_query', arguments: '{"sql":"SELECT 1"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'a', content: 'x'.repeat(700) },
    ];
    const lines = renderRunForReader(messages).split('\n');
    expect(lines[0]).toBe('assistant: thinking');
    expect(lines[1]).toBe('call sql_query({"sql":"SELECT 1"})');
    expect(lines[2]!.length).toBeLessThanOrEqual(8 + 600 + 20);
  });
});

describe('clearing results', () => {
  it('finds the results before a point, oldest first, with the tool each answered, and skips cleared ones', () => {
    const history = [...toolTurn('sql_query', 'list_tables'), ...toolTurn('describe_table')];
    const found = clearableResults(history, latestTurnStart(history));
    expect(found.map((r) => r.tools)).toEqual([['sql_query'], ['list_tables']]);
    const first = history[found[0]!.index] as ToolMessage;
    history[found[0]!.index] = { ...first, content: clearedResult('sql_query', 12) };
    expect(clearableResults(history, history.length).map((r) => r.tools)).toEqual([
      ['list_tables'],
      ['describe_table'],
    ]);
  });

  it('a cleared result says what it was and how to get it back', () => {
    const text = clearedResult('sql_query', 412);
    expect(text).toBe(
      '[cleared to save context: the result of sql_query, 412 tokens; call it again if needed]',
    );
    expect(isCleared(text)).toBe(true);
    expect(isCleared('rows: 3')).toBe(false);
  });

  it('an output that only starts like a cleared result is still cleared (a tool can return any text)', () => {
    const history = toolTurn('fetch_page');
    const result = history[1] as ToolMessage;
    history[1] = { ...result, content: `[cleared to save context: nothing here] ${'row '.repeat(500)}` };
    const found = clearableResults(history, history.length);
    expect(found).toEqual([{ index: 1, tools: ['fetch_page'] }]);
    const cleared = clearResult(history[1]!, found[0]!.tools, count);
    expect(cleared.message).toEqual({
      ...result,
      content: clearedResult('fetch_page', cleared.tokens),
    });
    expect(cleared.tokens).toBeGreaterThan(400);
  });

  it("finds the JSON protocol's result messages after a turn, never the task", () => {
    const history: ChatMessage[] = [
      { role: 'assistant', content: '{"tool":"list_tables","args":{}}' },
      { role: 'user', content: 'Result of list_tables: orders' },
      { role: 'assistant', content: '{"tools":[{"tool":"a","args":{}},{"tool":"b","args":{}}]}' },
      { role: 'user', content: 'Result 1 (a): x\nResult 2 (b): y' },
    ];
    expect(clearableResults(history, history.length)).toEqual([
      { index: 1, tools: ['list_tables'] },
      { index: 3, tools: ['a', 'b'] },
    ]);
  });

  it('a JSON result of several calls is cleared call by call: each stub names its tool, the framing stays', () => {
    const rows = (id: number) => JSON.stringify({ id, name: `customer-${id}` }, null, 2);
    const history: ChatMessage[] = [
      {
        role: 'assistant',
        content: '{"tools":[{"tool":"lookup","args":{"id":1}},{"tool":"sql_query","args":{}}]}',
      },
      { role: 'user', content: `Result 1 (lookup): ${rows(1)}\nResult 2 (sql_query): ${rows(2)}` },
    ];
    const [found] = clearableResults(history, history.length);
    const cleared = clearResult(history[1]!, found!.tools, count);
    expect(cleared.message).toEqual({
      role: 'user',
      content: [
        `Result 1 (lookup): ${clearedResult('lookup', count(rows(1)))}`,
        `Result 2 (sql_query): ${clearedResult('sql_query', count(rows(2)))}`,
      ].join('\n'),
    });
    expect(cleared.tokens).toBe(count(rows(1)) + count(rows(2)));
    history[1] = cleared.message;
    expect(clearableResults(history, history.length)).toEqual([]);
  });
});

describe('deterministicSummary', () => {
  it("lists the model's calls with their arguments and the size of each result, never a result's text", () => {
    const turn = toolTurn('sql_query');
    const summary = deterministicSummary(null, turn, tokens);
    expect(summary).toMatch(/^- I called sql_query\(\{"n":\d+\}\) → result of \d+ tokens, not kept$/);
    expect(summary).not.toContain('result of call_');
  });

  it('keeps the earlier summary lines before the new ones', () => {
    const first = deterministicSummary(null, toolTurn('list_tables'), tokens);
    const second = deterministicSummary(first, toolTurn('sql_query'), tokens);
    expect(second.split('\n')[0]).toBe(first);
    expect(second.split('\n')).toHaveLength(2);
  });

  it('keeps the lines of a model-written summary as list items, and text the model wrote on one line', () => {
    const summary = deterministicSummary('Done: listed tables.\nGoal: query.', textTurn('a\nb'), tokens);
    expect(summary.split('\n')).toEqual(['- Done: listed tables.', '- Goal: query.', '- I wrote: a b']);
  });

  it('caps its size, keeping the newest lines', () => {
    const turns = Array.from({ length: 60 }, () => toolTurn('sql_query')).flat();
    const summary = deterministicSummary(null, turns, tokens);
    expect(summary.length).toBeLessThanOrEqual(2_400 + 40);
    expect(summary.split('\n')[0]).toBe('- (earlier steps omitted)');
    expect(summary).toContain(`"n":${nextId}`);
  });

  it('is what the oldest-first reading gives, whatever the turns and the earlier summary (property)', () => {
    const turn = fc.oneof(
      fc.array(fc.constantFrom('sql_query', 'list_tables', 'x'.repeat(700)), { minLength: 1, maxLength: 4 }),
      fc.string({ maxLength: 900 }).map((text) => [text]),
    );
    fc.assert(
      fc.property(
        fc.option(fc.string({ maxLength: 3_000 }), { nil: null }),
        fc.array(turn, { maxLength: 80 }),
        (previous, shapes) => {
          const folded = shapes.flatMap((shape) =>
            shape.length === 1 && !['sql_query', 'list_tables'].includes(shape[0]!)
              ? textTurn(shape[0]!)
              : toolTurn(...shape),
          );
          expect(deterministicSummary(previous, folded, tokens)).toBe(
            oldestFirstSummary(previous, folded, tokens),
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('costs the lines it keeps, not the length of the run: a summary of 5,000 turns counts a few results', () => {
    const turns = Array.from({ length: 5_000 }, () => toolTurn('sql_query')).flat();
    let counted = 0;
    const started = performance.now();
    const summary = deterministicSummary('- Done: listed tables.', turns, (message) => {
      counted++;
      return tokens(message);
    });
    // Before, every result was counted and the cap was met by dropping one line at a time from all 5,000
    // (about 4 s here).
    expect(counted).toBeLessThan(60);
    expect(performance.now() - started).toBeLessThan(500);
    expect(summary).toContain(`"n":${nextId}`);
  });

  it('reads as an assistant message', () => {
    expect(summaryMessage('- I called x()')).toEqual({
      role: 'assistant',
      content: 'Summary of my earlier steps:\n- I called x()',
    });
  });
});

describe('summary requests', () => {
  it('carry the task, the previous summary and the folded turns in the roles the run sent them', () => {
    const turn = toolTurn('sql_query');
    const messages = summaryRequestMessages('count the customers', 'Done: nothing', turn);
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'assistant', 'tool', 'user']);
    expect(messages[0]).toEqual({ role: 'system', content: SUMMARY_SYSTEM_PROMPT });
    expect(messages[1]).toEqual({ role: 'user', content: 'count the customers' });
    expect(messages[3]).toBe(turn[0]);
    expect(messages[4]).toBe(turn[1]);
    expect(summaryRequestMessages('t', null, turn).map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'user',
    ]);
  });

  it('isSummaryRequest recognises them and nothing else', () => {
    expect(isSummaryRequest(summaryRequestMessages('t', null, textTurn('x')))).toBe(true);
    expect(isSummaryRequest([])).toBe(false);
    expect(isSummaryRequest([{ role: 'system', content: 'You are an agent.' }])).toBe(false);
    expect(isSummaryRequest([{ role: 'user', content: SUMMARY_SYSTEM_PROMPT }])).toBe(false);
  });
});

/** The summary as first specified, built oldest first: the reference the newest-first one must equal. */
function oldestFirstSummary(
  previous: string | null,
  folded: readonly ChatMessage[],
  tokensOf: (message: ChatMessage) => number,
): string {
  const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ').trim();
  const clip = (text: string) =>
    text.length <= 600 ? text : `${text.slice(0, 600)} …[cut: ${text.length - 600} chars]`;
  const lines = (previous ?? '')
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => (line.startsWith('- ') ? line : `- ${line}`));
  const callLine = new Map<string, number>();
  for (const message of folded) {
    if (message.role === 'assistant') {
      if (message.content?.trim()) lines.push(`- I wrote: ${clip(oneLine(message.content))}`);
      for (const call of message.tool_calls ?? []) {
        callLine.set(call.id, lines.length);
        lines.push(`- I called ${call.function.name}(${clip(oneLine(call.function.arguments))})`);
      }
    } else if (message.role === 'tool') {
      const at = callLine.get(message.tool_call_id);
      const size = isCleared(message.content) ? 'cleared' : `${tokensOf(message)} tokens`;
      if (at !== undefined) lines[at] += ` → result of ${size}, not kept`;
    }
  }
  let text = lines.join('\n');
  while (text.length > 2_400 && lines.length > 1) {
    lines.shift();
    text = `- (earlier steps omitted)\n${lines.join('\n')}`;
  }
  return text;
}
