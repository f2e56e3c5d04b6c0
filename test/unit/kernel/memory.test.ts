// The sliding-window memory's pure parts: where the cut falls (never between a tool call and its result),
// the deterministic summary, and the summary request.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  deterministicSummary,
  FACTS_HEADER,
  factShowing,
  foldCut,
  foldPays,
  parseFacts,
  turnFacts,
  isSummaryRequest,
  renderForSummary,
  SUMMARY_SYSTEM_PROMPT,
  summaryRequestMessages,
} from '../../../src/kernel/memory.js';
import type { AssistantMessage, ChatMessage, ToolMessage } from '../../../src/kernel/messages.js';

const GOAL_LINE = 'Current goal: finish the task above without repeating completed actions.';

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

describe('renderForSummary', () => {
  it('renders one line per message, tool calls and results included, clipped', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'hello' },
      {
        role: 'assistant',
        content: 'thinking',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'sql_query', arguments: '{"sql":"x"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'y'.repeat(22) },
      { role: 'assistant', content: null },
    ];
    expect(renderForSummary(messages, 12)).toBe(
      [
        'user: hello',
        'assistant: thinking',
        'call sql_query({"sql":"x"})',
        'result: yyyyyyyyyyyy …[cut: 10 chars]',
      ].join('\n'),
    );
  });
});

describe('deterministicSummary', () => {
  it('lists the folded messages and ends with the goal line', () => {
    const summary = deterministicSummary(null, textTurn('looked up the tables'));
    expect(summary).toBe(
      [
        'Done so far:',
        '- assistant: looked up the tables',
        '- user: observation after looked up the tables',
        GOAL_LINE,
      ].join('\n'),
    );
  });

  it('keeps the earlier summary lines before the new ones', () => {
    const first = deterministicSummary(null, toolTurn('list_tables'));
    const second = deterministicSummary(first, textTurn('then answered'));
    const lines = second.split('\n');
    expect(lines[0]).toBe('Done so far:');
    expect(lines.slice(1, 3)).toEqual(first.split('\n').slice(1, 3));
    expect(lines.at(-2)).toBe('- user: observation after then answered');
    expect(lines.at(-1)).toBe(GOAL_LINE);
    expect(second.match(/Current goal:/g)).toHaveLength(1);
  });

  it('keeps the lines of a model-written summary as list items', () => {
    const summary = deterministicSummary('Done: listed tables.\n\nGoal: count customers.', textTurn('x'));
    expect(summary.split('\n').slice(0, 2)).toEqual(['Done so far:', '- Done: listed tables.']);
    expect(summary).toContain('- assistant: x');
    expect(summary.endsWith(`\n${GOAL_LINE}`)).toBe(true);
  });

  it('caps its size, keeping the newest lines and ending with the goal line', () => {
    let summary: string | null = null;
    for (let i = 0; i < 40; i++) {
      summary = deterministicSummary(summary, textTurn(`step ${i} ${'z'.repeat(300)}`));
      const body = summary.replace(/^Done so far:\n/, '').replace(/\nCurrent goal:[\s\S]*$/, '');
      expect(body.length).toBeLessThanOrEqual(2_400);
      expect(summary.endsWith(`\n${GOAL_LINE}`)).toBe(true);
    }
    expect(summary).toContain('- (earlier actions omitted)');
    expect(summary).toContain('step 39');
    expect(summary).not.toContain('step 0 ');
    // each folded message is clipped to 240 characters
    expect(summary).toMatch(/ …\[cut: \d+ chars\]/);
    expect(summary?.match(/\(earlier actions omitted\)/g)).toHaveLength(1);
  });
});

describe('summary requests', () => {
  it('carries the task, the previous summary and the folded messages', () => {
    const messages = summaryRequestMessages('count the customers', 'Done: nothing', textTurn('x'));
    expect(messages).toHaveLength(2);
    expect(messages[0]).toEqual({ role: 'system', content: SUMMARY_SYSTEM_PROMPT });
    expect(messages[1]?.role).toBe('user');
    expect(messages[1]?.content).toBe(
      [
        'Task: count the customers',
        'Summary so far:\nDone: nothing',
        'Messages to fold in:\nassistant: x\nuser: observation after x',
      ].join('\n\n'),
    );
    expect(summaryRequestMessages('t', null, textTurn('x'))[1]?.content).not.toContain('Summary so far');
  });

  it('isSummaryRequest recognises them and nothing else', () => {
    expect(isSummaryRequest(summaryRequestMessages('t', null, textTurn('x')))).toBe(true);
    expect(isSummaryRequest([])).toBe(false);
    expect(isSummaryRequest([{ role: 'system', content: 'You are an agent.' }])).toBe(false);
    expect(isSummaryRequest([{ role: 'user', content: SUMMARY_SYSTEM_PROMPT }])).toBe(false);
  });
});

describe('cache-aware facts', () => {
  const prices = { inputPerMillion: 2, cachedInputPerMillion: 0.5 };

  it('a fact keeps the whole result and names long arguments by their start and end', () => {
    const sql = `SELECT name FROM people WHERE ${'x = 1 AND '.repeat(30)}name = 'Ada Lovelace'`;
    const facts = turnFacts(3, [{ tool: 'sql_query', args: { sql }, output: 'name\nAda Lovelace' }]);
    expect(facts).toMatch(
      /^#3 sql_query sql="SELECT name FROM people WHERE x = 1 AND .*….*name = 'Ada Lovelace'"\nname\nAda Lovelace$/,
    );
    expect(facts.length).toBeLessThan(sql.length);
    expect(parseFacts(`${FACTS_HEADER}\n${facts}`)).toEqual([
      { step: 3, tool: 'sql_query', args: expect.any(String), output: 'name\nAda Lovelace' },
    ]);
  });

  it('a fact leaves out an argument its result quotes, and keeps of a long text its first words and length', () => {
    const body =
      'Dear Carla Tanaka,\n\nThank you for being one of our best customers this quarter.\n\nBest regards';
    const output = 'Sent to carla.tanaka@example.com (message-id <1@x>).';
    const facts = turnFacts(3, [
      { tool: 'send_email', args: { to: 'carla.tanaka@example.com', subject: 'Thanks', body }, output },
    ]);
    expect(facts).toBe(
      `#3 send_email subject=Thanks body="Dear Carla Tanaka, T… (${body.length} chars)"\n${output}`,
    );
    // Short values stay, quoted or not by the result: they name the call for little.
    expect(turnFacts(1, [{ tool: 'peek', args: { key: 'a' }, output: 'a' }])).toBe('#1 peek key=a\na');
  });

  it('a fact keeps an argument its result only contains inside a longer name or number', () => {
    const lookup = (args: Record<string, string>, output: string) =>
      turnFacts(2, [{ tool: 'lookup', args, output }]).split('\n')[0];
    // Another order, another customer, another file: the result does not say which one was asked for.
    expect(lookup({ id: 'ORD-1001' }, 'ORD-10010: shipped')).toBe('#2 lookup id=ORD-1001');
    expect(lookup({ email: 'bob@example.com' }, 'jimbob@example.com: no orders')).toBe(
      '#2 lookup email=bob@example.com',
    );
    expect(lookup({ path: '/data/report.csv' }, 'read /mnt/data/report.csv')).toBe(
      '#2 lookup path=/data/report.csv',
    );
    // Quoted whole, even next to punctuation, and anywhere among longer lookalikes: left out.
    expect(lookup({ id: 'ORD-1001' }, 'ORD-10010, ORD-1001: shipped')).toBe('#2 lookup');
    expect(lookup({ to: 'bob@example.com' }, 'Sent to bob@example.com.')).toBe('#2 lookup');
    // A long argument inside a long result made of it: searched once per occurrence, not per character.
    const started = performance.now();
    expect(lookup({ v: 'a'.repeat(10_000) }, 'a'.repeat(400_000))).toMatch(/^#2 lookup v=/);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('a result an earlier fact shows is named instead of repeated', () => {
    const output = 'a long result that the model has already seen once';
    const earlier = turnFacts(1, [{ tool: 'peek', args: { key: 'a' }, output }]);
    const again = turnFacts(2, [{ tool: 'peek', args: { key: 'b' }, output }], (o) =>
      factShowing([earlier], o),
    );
    expect(again).toBe('#2 peek key=b\n(the same result as #1)');
  });

  it('folding pays on a prompt too short to be cached, and when later calls repay the lost cache hits', () => {
    const base = { verbatimTokens: 300, factsTokens: 150, laterCalls: 5 };
    expect(foldPays({ ...base, prefixTokens: 400, sentBefore: true }, prices)).toBe(true);
    // Cached, the verbatim part would cost a quarter next call; the facts cost full price once.
    expect(foldPays({ ...base, prefixTokens: 2_000, sentBefore: true, laterCalls: 0 }, prices)).toBe(false);
    expect(foldPays({ ...base, prefixTokens: 2_000, sentBefore: true, laterCalls: 3 }, prices)).toBe(true);
    // Never sent, a turn costs the same either way next call: the smaller form wins.
    expect(foldPays({ ...base, prefixTokens: 2_000, sentBefore: false, laterCalls: 0 }, prices)).toBe(true);
    expect(foldPays({ ...base, factsTokens: 300, prefixTokens: 0, sentBefore: false }, prices)).toBe(false);
  });
});
