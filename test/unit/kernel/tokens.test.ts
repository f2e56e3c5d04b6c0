// Token counting: the encoding chosen per model, the per-message and per-tool overheads, and the caches that
// must never change a count.
import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatMessage, ToolSpec } from '../../../src/kernel/messages.js';
import {
  countCompletionTokens,
  countMessageTokens,
  countPromptTokens,
  countPromptTokensBound,
  countToolsTokens,
  estimateMessageTokensByLine,
  estimateTokensByLine,
  LONG_TEXT_CHARS_KEPT,
  tokenCounterFor,
  toolCallFramingTokens,
  type TokenCounter,
} from '../../../src/kernel/tokens.js';

/** A counter that counts its own calls, to see the caches at work. */
function spyCounter(inner: TokenCounter = cl100k) {
  const calls: string[] = [];
  const count: TokenCounter = (text) => {
    calls.push(text);
    return inner(text);
  };
  return { count, calls };
}

const TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'sql_query',
      description: 'Run a read-only SQL query.',
      parameters: { type: 'object', properties: { sql: { type: 'string' } }, required: ['sql'] },
    },
  },
];

const SAMPLE = 'Здравствуйте, как дела? 你好世界 — ñandú';

describe('tokenCounterFor', () => {
  it('o200k_base for gpt-4o, gpt-4.1, gpt-5 and the o-series', () => {
    for (const model of [
      'gpt-4o',
      'gpt-4o-mini',
      'gpt-4.1',
      'gpt-4.1-mini',
      'gpt-4.1-nano',
      'gpt-5',
      'o1',
      'o3-mini',
    ])
      expect(tokenCounterFor(model)(SAMPLE), model).toBe(o200k(SAMPLE));
    // One counter per encoding, so the caches keyed by counter are shared by its models.
    expect(tokenCounterFor('gpt-4.1')).toBe(tokenCounterFor('gpt-4o'));
  });

  it('cl100k_base for the older GPT-4 models and anything else', () => {
    for (const model of ['gpt-4-turbo', 'gpt-4-turbo-preview', 'gpt-4', 'gpt-3.5-turbo', 'my-local-model'])
      expect(tokenCounterFor(model)(SAMPLE), model).toBe(cl100k(SAMPLE));
    expect(tokenCounterFor('gpt-4')).toBe(tokenCounterFor('gpt-4-turbo'));
  });

  it('loads an encoding only when a model needs it', () => {
    // A fresh process: counting for gpt-4-turbo must not load o200k_base's 18 MB of tables.
    const script = [
      "import { createRequire } from 'node:module';",
      "const { tokenCounterFor } = await import('./src/kernel/tokens.ts');",
      "tokenCounterFor('gpt-4-turbo')('hello');",
      'const loaded = Object.keys(createRequire(import.meta.url).cache);',
      "console.log(JSON.stringify(['cl100k_base', 'o200k_base'].map((e) => loaded.some((k) => k.includes('bpeRanks/' + e)))));",
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(out.trim())).toEqual([true, false]);
  });

  it('counts special-token text as text instead of throwing', () => {
    const text = 'a <|endoftext|> b <|im_start|>';
    expect(() => cl100k(text)).toThrow(/special token/);
    expect(tokenCounterFor('gpt-4-turbo')(text)).toBe(cl100k(text, { disallowedSpecial: new Set() }));
    expect(tokenCounterFor('gpt-4o')(text)).toBe(o200k(text, { disallowedSpecial: new Set() }));
    expect(tokenCounterFor('gpt-4o')(text)).toBeGreaterThan(o200k('a  b '));
  });

  it('the two encodings really count differently', () => {
    expect(o200k(SAMPLE)).not.toBe(cl100k(SAMPLE));
  });
});

describe('countMessageTokens', () => {
  it('content plus 3 tokens plus the role', () => {
    const count = cl100k;
    expect(countMessageTokens({ role: 'user', content: 'hello world' }, count)).toBe(
      3 + count('user') + count('hello world'),
    );
    expect(countMessageTokens({ role: 'system', content: '' }, count)).toBe(3 + count('system'));
    expect(countMessageTokens({ role: 'assistant', content: null }, count)).toBe(3 + count('assistant'));
  });

  it('a tool result counts its call id', () => {
    const message: ChatMessage = { role: 'tool', tool_call_id: 'call_abc123', content: '42 rows' };
    expect(countMessageTokens(message, o200k)).toBe(
      3 + o200k('tool') + o200k('42 rows') + o200k('call_abc123'),
    );
  });

  it('an assistant tool call counts 4 tokens plus its id, name and arguments', () => {
    const message: ChatMessage = {
      role: 'assistant',
      content: 'Let me look.',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'sql_query', arguments: '{"sql":"SELECT 1"}' } },
        { id: 'call_2', type: 'function', function: { name: 'list_tables', arguments: '{}' } },
      ],
    };
    const c = cl100k;
    expect(countMessageTokens(message, c)).toBe(
      3 +
        c('assistant') +
        c('Let me look.') +
        (4 + c('call_1') + c('sql_query') + c('{"sql":"SELECT 1"}')) +
        (4 + c('call_2') + c('list_tables') + c('{}')),
    );
  });

  it('is counted once per message object and counter', () => {
    const { count, calls } = spyCounter();
    const message: ChatMessage = { role: 'user', content: 'count me once' };
    const first = countMessageTokens(message, count);
    const afterFirst = calls.length;
    expect(afterFirst).toBeGreaterThan(0);
    expect(countMessageTokens(message, count)).toBe(first);
    expect(calls.length).toBe(afterFirst);
    // a copy is a new object, counted afresh to the same number; its texts are remembered by value, so the
    // tokenizer is not asked again
    expect(countMessageTokens({ ...message }, count)).toBe(first);
    expect(calls.length).toBe(afterFirst);
  });

  it('a long text (a system prompt) is counted once however many message objects carry it', () => {
    const { count, calls } = spyCounter();
    const prompt = `You are an analyst. ${'Use the tools to answer. '.repeat(40)}`;
    const first = countMessageTokens({ role: 'system', content: prompt }, count);
    const second = countMessageTokens({ role: 'system', content: prompt }, count);
    expect(second).toBe(first);
    expect(first).toBe(3 + cl100k('system') + cl100k(prompt));
    expect(calls.filter((text) => text === prompt)).toHaveLength(1);
    // Short texts too: looking one up costs less than counting it.
    countMessageTokens({ role: 'user', content: 'hello' }, count);
    countMessageTokens({ role: 'user', content: 'hello' }, count);
    expect(calls.filter((text) => text === 'hello')).toHaveLength(1);
  });

  it("a call's id and its tool's name are counted once, in its message, its result and the framing bound", () => {
    const { count, calls } = spyCounter();
    const turn = (id: string): ChatMessage[] => [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id, type: 'function', function: { name: 'sql_query', arguments: '{"sql":"SELECT 1"}' } },
        ],
      },
      { role: 'tool', tool_call_id: id, content: '[{"1":1}]' },
    ];
    const prompt = [...turn('call_a1'), ...turn('call_b2')];
    const bound = countPromptTokensBound(prompt, TOOLS, count);
    expect(calls.filter((text) => text === 'call_a1')).toHaveLength(1);
    expect(calls.filter((text) => text === 'call_b2')).toHaveLength(1);
    expect(calls.filter((text) => text === 'sql_query')).toHaveLength(1);
    expect(bound).toBe(countPromptTokensBound(prompt, TOOLS, cl100k));
  });

  it('short texts remembered are bounded in number: past the bound they are counted again', () => {
    const { count, calls } = spyCounter((text) => text.length);
    countMessageTokens({ role: 'user', content: 'first' }, count);
    for (let i = 0; i < 5_000; i++) countMessageTokens({ role: 'user', content: `t${i}` }, count);
    countMessageTokens({ role: 'user', content: 'first' }, count);
    expect(calls.filter((text) => text === 'first')).toHaveLength(2);
  });

  it('the role names are counted once per counter, and only they are kept by name', () => {
    const { count, calls } = spyCounter();
    const messages: ChatMessage[] = [
      { role: 'user', content: 'one' },
      { role: 'user', content: 'two' },
      { role: 'assistant', content: 'three' },
      { role: 'user', content: 'four' },
    ];
    const tokens = countPromptTokens(messages, undefined, count);
    expect(tokens).toBe(3 + messages.reduce((sum, m) => sum + 3 + cl100k(m.role) + cl100k(m.content!), 0));
    expect(calls.filter((text) => text === 'user')).toHaveLength(1);
    expect(calls.filter((text) => text === 'assistant')).toHaveLength(1);
    // Not a role of the wire format (a damaged checkpoint): counted, never kept.
    const odd = { role: 'narrator', content: 'x' } as unknown as ChatMessage;
    countMessageTokens(odd, count);
    countMessageTokens({ ...odd }, count);
    expect(calls.filter((text) => text === 'narrator')).toHaveLength(2);
  });

  it('the texts remembered by value are bounded in characters, not only in number', () => {
    // A counter of its own (the caches are per counter), cheap: the bound is what is under test.
    const calls: string[] = [];
    const count: TokenCounter = (text) => {
      calls.push(text);
      return text.length;
    };
    const kept = `system ${'x'.repeat(600)}`;
    const times = () => calls.filter((t) => t === kept).length;
    countMessageTokens({ role: 'system', content: kept }, count);
    countMessageTokens({ role: 'system', content: kept }, count);
    expect(times()).toBe(1);
    // Ten hostile results of half a million characters: far fewer texts than the count bound, more characters
    // than the character bound, so the map is emptied on the way and the first text is counted again.
    for (let i = 0; i < 10; i++) countMessageTokens({ role: 'user', content: `${i}`.repeat(500_000) }, count);
    countMessageTokens({ role: 'system', content: kept }, count);
    expect(times()).toBe(2);
    // A text larger than the whole bound is never kept.
    const huge = 'y'.repeat(LONG_TEXT_CHARS_KEPT + 1);
    countMessageTokens({ role: 'user', content: huge }, count);
    countMessageTokens({ role: 'user', content: huge }, count);
    expect(calls.filter((t) => t === huge)).toHaveLength(2);
  });

  it('the cache is per counter: the same message under another encoding gets that encoding’s count', () => {
    const message: ChatMessage = { role: 'user', content: 'Здравствуйте, как дела? 你好世界' };
    const a = countMessageTokens(message, cl100k);
    const b = countMessageTokens(message, o200k);
    expect(a).toBe(3 + cl100k('user') + cl100k(message.content));
    expect(b).toBe(3 + o200k('user') + o200k(message.content));
    expect(a).not.toBe(b);
  });

  it('a cached count equals a fresh count (property)', () => {
    const call = fc.record({
      id: fc.string({ minLength: 1, maxLength: 12 }),
      type: fc.constant('function' as const),
      function: fc.record({ name: fc.string({ maxLength: 12 }), arguments: fc.string({ maxLength: 40 }) }),
    });
    const message: fc.Arbitrary<ChatMessage> = fc.oneof(
      fc.record({
        role: fc.constantFrom('system' as const, 'user' as const),
        content: fc.string({ maxLength: 80 }),
      }),
      fc.record({
        role: fc.constant('tool' as const),
        tool_call_id: fc.string(),
        content: fc.string({ maxLength: 80 }),
      }),
      fc.record(
        {
          role: fc.constant('assistant' as const),
          content: fc.option(fc.string({ maxLength: 80 })),
          tool_calls: fc.array(call, { maxLength: 3 }),
        },
        { requiredKeys: ['role', 'content'] },
      ),
    );
    fc.assert(
      fc.property(fc.array(message, { maxLength: 6 }), fc.constantFrom(cl100k, o200k), (messages, count) => {
        const cached = messages.map((m) => countMessageTokens(m, count));
        expect(messages.map((m) => countMessageTokens(m, count))).toEqual(cached);
        expect(messages.map((m) => countMessageTokens(structuredClone(m), count))).toEqual(cached);
        expect(countPromptTokens(messages, undefined, count)).toBe(3 + cached.reduce((a, b) => a + b, 0));
      }),
      { numRuns: 300 },
    );
  });
});

describe('countToolsTokens / countPromptTokens', () => {
  it('no tools cost nothing; tools cost their JSON plus 12', () => {
    expect(countToolsTokens(undefined, cl100k)).toBe(0);
    expect(countToolsTokens([], cl100k)).toBe(0);
    expect(countToolsTokens(TOOLS, cl100k)).toBe(12 + cl100k(JSON.stringify(TOOLS)));
    expect(countToolsTokens(TOOLS, o200k)).toBe(12 + o200k(JSON.stringify(TOOLS)));
  });

  it('the tools count is cached per array', () => {
    const { count, calls } = spyCounter();
    const tools = structuredClone(TOOLS);
    const first = countToolsTokens(tools, count);
    expect(countToolsTokens(tools, count)).toBe(first);
    expect(calls).toHaveLength(1);
  });

  it('a prompt is its messages, its tools and 3 tokens of reply priming', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: 'How many customers?' },
    ];
    const bare = 3 + countMessageTokens(messages[0]!, o200k) + countMessageTokens(messages[1]!, o200k);
    expect(countPromptTokens(messages, undefined, o200k)).toBe(bare);
    expect(countPromptTokens(messages, TOOLS, o200k)).toBe(bare + countToolsTokens(TOOLS, o200k));
    expect(countPromptTokens([], undefined, o200k)).toBe(3);
  });
});

describe('countCompletionTokens', () => {
  it('text plus, per call, 4 tokens, the name and the arguments (no ids)', () => {
    const c = o200k;
    expect(countCompletionTokens(null, undefined, c)).toBe(0);
    expect(countCompletionTokens('The answer is 42.', undefined, c)).toBe(c('The answer is 42.'));
    expect(
      countCompletionTokens(
        null,
        [
          { function: { name: 'sql_query', arguments: '{"sql":"SELECT 1"}' } },
          { function: { name: 'list_tables', arguments: '{}' } },
        ],
        c,
      ),
    ).toBe(4 + c('sql_query') + c('{"sql":"SELECT 1"}') + 4 + c('list_tables') + c('{}'));
  });
});

describe('estimateTokensByLine', () => {
  const line = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc.constantFrom('- lookup(id=3) → {"id":3,"name":"Ada"}.', 'Done so far:', '  indented, then a dot.', ''),
  );

  it('is the exact count or a little above it, never below', () => {
    for (const [name, count] of [
      ['cl100k', cl100k],
      ['o200k', o200k],
    ] as const) {
      fc.assert(
        fc.property(fc.array(line, { minLength: 1, maxLength: 12 }), (lines) => {
          const text = lines.join('\n');
          const exact = count(text);
          const estimate = estimateTokensByLine(text, count);
          expect(estimate, name).toBeGreaterThanOrEqual(exact);
          // At most a token a line over, and one more where a break may split the next line's first piece.
          expect(estimate, name).toBeLessThanOrEqual(exact + 2 * lines.length);
        }),
        { numRuns: 300 },
      );
    }
  });

  it('is not below where a punctuation piece takes the break and the next line’s leading / or CR (found by the property)', () => {
    for (const lines of [
      ['&#', '/:'],
      ['/:', '\r/:'],
    ]) {
      const text = lines.join('\n');
      for (const count of [cl100k, o200k])
        expect(estimateTokensByLine(text, count)).toBeGreaterThanOrEqual(count(text));
    }
  });

  it('counts each distinct line once, and gives a message its estimate as its count', () => {
    const { count, calls } = spyCounter();
    const summary = (n: number) =>
      ['Done so far:', ...Array.from({ length: n }, (_, i) => `- step ${i + 1}: lookup(${i})`)].join('\n');
    estimateTokensByLine(summary(3), count);
    estimateTokensByLine(summary(4), count);
    expect(calls.filter((text) => text === '- step 1: lookup(0)')).toHaveLength(1);
    expect(calls.filter((text) => text === '- step 4: lookup(3)')).toHaveLength(1);

    const message: ChatMessage = { role: 'user', content: summary(5) };
    const estimate = estimateMessageTokensByLine(message, count);
    const before = calls.length;
    expect(countMessageTokens(message, count)).toBe(estimate);
    expect(calls.length).toBe(before);
  });

  it('a message estimated again is not gone through again: its estimate stands', () => {
    const { count, calls } = spyCounter((text) => text.length);
    const message: ChatMessage = { role: 'assistant', content: '- I called a(1)\n- I called b(2)' };
    const estimate = estimateMessageTokensByLine(message, count);
    // Enough other lines to empty the remembered lines: going through the message again would count its lines.
    estimateTokensByLine(Array.from({ length: 5_000 }, (_, i) => `- line ${i}`).join('\n'), count);
    const before = calls.length;
    expect(estimateMessageTokensByLine(message, count)).toBe(estimate);
    expect(calls.length).toBe(before);
  });
});

describe('toolCallFramingTokens / countPromptTokensBound', () => {
  const call = (id: string, name: string, args: string) =>
    ({ id, type: 'function', function: { name, arguments: args } }) as const;
  const calls = (...toolCalls: ReturnType<typeof call>[]): ChatMessage => ({
    role: 'assistant',
    content: null,
    tool_calls: [...toolCalls],
  });
  const serializedExtra = (c: TokenCounter, ...toolCalls: ReturnType<typeof call>[]) =>
    toolCalls.reduce(
      (sum, t) => sum + c(JSON.stringify(t)) - c(t.id) - c(t.function.name) - c(t.function.arguments),
      0,
    );

  it('only a message of tool calls has a framing', () => {
    for (const message of [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'done' },
      { role: 'assistant', content: null, tool_calls: [] },
      { role: 'tool', tool_call_id: 'call_1', content: '42' },
    ] as ChatMessage[])
      expect(toolCallFramingTokens(message, cl100k)).toBe(0);
  });

  it('a message of one call costs 7 more than the documented 4, and 12 to close it', () => {
    // Fitted to OpenAI's usage; for a single call it is more than the call's JSON adds.
    const single = [call('call_Xk2pQ9vL7mN3bR8tY1wZ5cD', 'add', '{}')];
    expect(serializedExtra(cl100k, ...single)).toBeLessThan(7 + 12);
    expect(toolCallFramingTokens(calls(...single), cl100k)).toBe(7 + 12);
  });

  it('a call is never counted below its JSON, keys, quotes and escapes included', () => {
    const args = JSON.stringify({ to: 'a@example.com', body: 'Dear "Ada",\n\nthanks.' });
    const many = [
      call('call_1', 'send_email', args),
      call('call_2', 'send_email', args),
      call('call_3', 'x', '{}'),
    ];
    const message = calls(...many);
    for (const c of [cl100k, o200k]) {
      expect(serializedExtra(c, ...many)).toBeGreaterThan(3 * 7 + 12);
      expect(toolCallFramingTokens(message, c)).toBe(serializedExtra(c, ...many));
    }
  });

  it('the bound is the documented count plus the framing of every message of calls', () => {
    const first = calls(call('call_1', 'lookup', '{"id":1}'));
    const second = calls(call('call_2', 'lookup', '{"id":2}'), call('call_3', 'add', '{"a":1,"b":2}'));
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are an agent.' },
      first,
      { role: 'tool', tool_call_id: 'call_1', content: 'Ada' },
      second,
    ];
    expect(countPromptTokensBound(messages, TOOLS, o200k)).toBe(
      countPromptTokens(messages, TOOLS, o200k) +
        toolCallFramingTokens(first, o200k) +
        toolCallFramingTokens(second, o200k),
    );
    const plain: ChatMessage[] = [{ role: 'user', content: 'no calls' }];
    expect(countPromptTokensBound(plain, TOOLS, o200k)).toBe(countPromptTokens(plain, TOOLS, o200k));
  });

  it('is counted once per message object and counter', () => {
    const { count, calls: counted } = spyCounter();
    const message = calls(call('call_1', 'lookup', '{"id":1}'));
    const first = toolCallFramingTokens(message, count);
    const after = counted.length;
    expect(toolCallFramingTokens(message, count)).toBe(first);
    expect(counted.length).toBe(after);
  });
});
