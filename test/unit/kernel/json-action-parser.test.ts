import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { parseJsonReply, scanReply } from '../../../src/kernel/json-action-parser.js';
import type { ParsedJsonReply } from '../../../src/kernel/json-action-parser.js';

const call = (tool: string, args: unknown = {}): ParsedJsonReply => ({
  kind: 'actions',
  actions: [{ tool, args }],
});

function reasonOf(text: string): string {
  const reply = parseJsonReply(text);
  if (reply.kind !== 'invalid') throw new Error(`expected invalid, got ${JSON.stringify(reply)}`);
  return reply.reason;
}

describe('parseJsonReply: finding the object', () => {
  it('parses a plain object', () => {
    expect(parseJsonReply('{"tool": "read_file", "args": {"path": "a.txt"}}')).toEqual(
      call('read_file', { path: 'a.txt' }),
    );
    expect(parseJsonReply('{"answer": "42"}')).toEqual({ kind: 'answer', answer: '42' });
  });

  it('reads a code fence with a language tag', () => {
    const text = 'Here you go:\n```json\n{"tool": "ls", "args": {"dir": "."}}\n```\nThat lists it.';
    expect(parseJsonReply(text)).toEqual(call('ls', { dir: '.' }));
  });

  it('reads a code fence without a language tag', () => {
    expect(parseJsonReply('```\n{"answer": "done"}\n```')).toEqual({ kind: 'answer', answer: 'done' });
  });

  it('prefers the fence over a brace in the prose before it', () => {
    const text = 'I will not use the { character here.\n```json\n{"tool": "ls", "args": {}}\n```';
    expect(parseJsonReply(text)).toEqual(call('ls'));
  });

  it('is not fooled by a fence inside a string value of a fenced answer', () => {
    const answer = 'Run this:\n```sh\nls -la\n```\nDone.';
    const text = '```json\n' + JSON.stringify({ answer }) + '\n```';
    expect(parseJsonReply(text)).toEqual({ kind: 'answer', answer });
  });

  it('ignores prose before and after the object', () => {
    const text = 'Sure, I\'ll check it. {"tool": "grep", "args": {"pattern": "x"}} Let\'s see what it says.';
    expect(parseJsonReply(text)).toEqual(call('grep', { pattern: 'x' }));
  });

  it('picks the first valid one of two objects', () => {
    const text = '{"tool": "a", "args": {"n": 1}}\nand then {"tool": "b", "args": {"n": 2}}';
    expect(parseJsonReply(text)).toEqual(call('a', { n: 1 }));
  });

  it('skips an invalid first object and takes a valid one after it', () => {
    const text = 'Thinking: {"plan": "look first"}\n{"tool": "ls", "args": {}}';
    expect(parseJsonReply(text)).toEqual(call('ls'));
    expect(parseJsonReply('{not json at all: [} then {"answer": "ok"}')).toEqual({
      kind: 'answer',
      answer: 'ok',
    });
  });
});

describe('parseJsonReply: repairing the syntax', () => {
  it('accepts single quotes', () => {
    expect(parseJsonReply("{'tool': 'ls', 'args': {'dir': 'src'}}")).toEqual(call('ls', { dir: 'src' }));
  });

  it('accepts trailing commas', () => {
    expect(parseJsonReply('{"tool": "ls", "args": {"dir": "src",},}')).toEqual(call('ls', { dir: 'src' }));
  });

  it('accepts unquoted keys', () => {
    expect(parseJsonReply('{tool: "ls", args: {dir: "src"}}')).toEqual(call('ls', { dir: 'src' }));
  });

  it('accepts Python True, False and None', () => {
    expect(parseJsonReply("{'tool': 'run', 'args': {'force': True, 'dry': False, 'cwd': None}}")).toEqual(
      call('run', { force: true, dry: false, cwd: null }),
    );
  });

  it('keeps braces and quotes inside string values', () => {
    const sql = `SELECT '{' AS open, "}" AS close, 'it''s' FROM t WHERE x = '\\"{'`;
    const text = 'Query: ' + JSON.stringify({ tool: 'sql', args: { query: sql } }) + ' done }';
    expect(parseJsonReply(text)).toEqual(call('sql', { query: sql }));
    expect(parseJsonReply(`Call: {'tool': 'fmt', 'args': {'t': 'He said "}" then {'}} ok`)).toEqual(
      call('fmt', { t: 'He said "}" then {' }),
    );
  });

  it('keeps nested args objects', () => {
    const args = {
      filter: {
        and: [
          { field: 'a', eq: 1 },
          { field: 'b', in: [1, 2] },
        ],
      },
      options: { limit: 5 },
    };
    expect(parseJsonReply(JSON.stringify({ tool: 'search', args }))).toEqual(call('search', args));
  });

  it('closes cut-off output', () => {
    expect(parseJsonReply('{"tool": "write_file", "args": {"path": "a.txt", "content": "hel')).toEqual(
      call('write_file', { path: 'a.txt', content: 'hel' }),
    );
    expect(parseJsonReply('```json\n{"tool": "ls", "args": {"dir": "src"}\n```')).toEqual(
      call('ls', { dir: 'src' }),
    );
  });
});

describe('parseJsonReply: shapes', () => {
  it('reads several calls from "tools"', () => {
    const text =
      '{"tools": [{"tool": "a", "args": {"x": 1}}, {"name": "b", "arguments": {"y": 2}}, {"tool": "c"}]}';
    expect(parseJsonReply(text)).toEqual({
      kind: 'actions',
      actions: [
        { tool: 'a', args: { x: 1 } },
        { tool: 'b', args: { y: 2 } },
        { tool: 'c', args: {} },
      ],
    });
  });

  it('defaults args to {} and accepts the aliases "arguments" and "input"', () => {
    expect(parseJsonReply('{"tool": "now"}')).toEqual(call('now'));
    expect(parseJsonReply('{"tool": "now", "args": null}')).toEqual(call('now'));
    expect(parseJsonReply('{"tool": "cat", "arguments": {"p": 1}}')).toEqual(call('cat', { p: 1 }));
    expect(parseJsonReply('{"tool": "cat", "input": {"p": 2}}')).toEqual(call('cat', { p: 2 }));
  });

  it('parses args sent as a JSON string', () => {
    expect(parseJsonReply('{"tool": "cat", "args": "{\\"path\\": \\"a.txt\\"}"}')).toEqual(
      call('cat', { path: 'a.txt' }),
    );
    // A string that is not a JSON object is left for the tool's argument validation.
    expect(parseJsonReply('{"tool": "echo", "args": "hello"}')).toEqual(call('echo', 'hello'));
  });

  it('prefers a tool call over an answer, but a null tool means answer', () => {
    expect(parseJsonReply('{"answer": "done", "tool": "ls", "args": {}}')).toEqual(call('ls'));
    expect(parseJsonReply('{"tool": null, "args": null, "answer": "done"}')).toEqual({
      kind: 'answer',
      answer: 'done',
    });
  });

  it('stringifies a non-string answer', () => {
    expect(parseJsonReply('{"answer": {"total": 3}}')).toEqual({ kind: 'answer', answer: '{"total":3}' });
    expect(parseJsonReply('{"answer": 7}')).toEqual({ kind: 'answer', answer: '7' });
  });
});

describe('parseJsonReply: invalid replies and their reasons', () => {
  it('says there was no JSON object for empty text and prose only', () => {
    const expected =
      'Your reply had no JSON object. Reply with exactly one JSON object: {"tool": "<name>", "args": {...}} or {"answer": "..."}.';
    expect(reasonOf('')).toBe(expected);
    expect(reasonOf('   \n')).toBe(expected);
    expect(reasonOf("I think we should list the files first, then read the README. Let's go.")).toBe(
      expected,
    );
  });

  it('rejects a JSON array at top level, pointing to "tools"', () => {
    const reason = reasonOf('[{"tool": "a", "args": {}}, {"tool": "b", "args": {}}]');
    expect(reason).toMatch(/array/);
    expect(reason).toContain('{"tools": [');
    expect(reasonOf("```json\n[{'tool': 'a'}]\n```")).toMatch(/array/);
    // An array of non-objects holds no object at all.
    expect(reasonOf('[1, 2, 3]')).toMatch(/no JSON object/);
  });

  it('does not mistake a bracketed prose tag for an array reply', () => {
    expect(parseJsonReply('[Thinking] {"tool": "ls"}')).toEqual(call('ls'));
  });

  it('names the keys of an object of the wrong shape', () => {
    const reason = reasonOf('{"foo": 1, "bar": 2}');
    expect(reason).toContain('"foo", "bar"');
    expect(reason).toContain('{"tool": "<name>", "args": {...}}');
    expect(reasonOf('{}')).toMatch(/empty/);
  });

  it('says what was wrong with the tool name', () => {
    expect(reasonOf('{"tool": 3}')).toMatch(/"tool" must be a non-empty string .* it was 3\./);
    expect(reasonOf('{"tool": ""}')).toMatch(/"tool" must be a non-empty string .* it was ""\./);
    expect(reasonOf('{"tool": null}')).toMatch(/it was null\./);
  });

  it('rejects bad "tools" lists', () => {
    expect(reasonOf('{"tools": []}')).toMatch(/"tools" was an empty array/);
    expect(reasonOf('{"tools": "ls"}')).toMatch(/"tools" must be an array, but it was "ls"/);
    expect(reasonOf('{"tools": [{"tool": "a"}, 5]}')).toMatch(/"tools"\[1\] must be an object, but it was 5/);
    expect(reasonOf('{"tools": [{"tool": "a"}, {"args": {}}]}')).toMatch(
      /"tools"\[1\]\.tool must be a non-empty string .* missing \(the object had key "args"\)/,
    );
  });

  it('keeps reasons short', () => {
    expect(reasonOf(JSON.stringify({ tool: { nested: 'x'.repeat(5000) } })).length).toBeLessThan(300);
    const manyKeys = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${'k'.repeat(500)}${i}`, i]));
    expect(reasonOf(JSON.stringify(manyKeys)).length).toBeLessThan(400);
  });

  it('reports an object that cannot be repaired', () => {
    expect(reasonOf('Plan: {thinking}')).toMatch(/could not be parsed/);
  });
});

describe('parseJsonReply: properties', () => {
  const isWellFormed = (reply: ParsedJsonReply): boolean => {
    switch (reply.kind) {
      case 'answer':
        return typeof reply.answer === 'string';
      case 'actions':
        return (
          reply.actions.length > 0 && reply.actions.every((a) => typeof a.tool === 'string' && a.tool !== '')
        );
      case 'invalid':
        return typeof reply.reason === 'string' && reply.reason.length > 0;
    }
  };

  it('never throws on arbitrary strings and returns one of the three kinds', () => {
    const noisy = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.string({
        unit: fc.constantFrom('{', '}', '[', ']', '"', "'", '\\', ':', ',', '`', '\n', 'a', ' ', 'tool'),
      }),
    );
    fc.assert(fc.property(noisy, (text) => isWellFormed(parseJsonReply(text))));
  });

  it('never throws on JSON values embedded in prose and fences, whole or cut off', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.jsonValue(),
        fc.string(),
        fc.boolean(),
        fc.nat(),
        (before, value, after, fenced, cut) => {
          const json = JSON.stringify(value);
          const body = fenced ? '```json\n' + json + '\n```' : json;
          const text = before + body + after;
          return (
            isWellFormed(parseJsonReply(text)) &&
            isWellFormed(parseJsonReply(text.slice(0, cut % (text.length + 1))))
          );
        },
      ),
    );
  });

  it('never throws on absurdly deep nesting', () => {
    const depth = 100_000;
    for (const text of ['{"answer": ' + '['.repeat(depth) + ']'.repeat(depth) + '}', '{"a":'.repeat(depth)]) {
      expect(isWellFormed(parseJsonReply(text))).toBe(true);
    }
  });

  it('round-trips any {tool, args} wrapped in prose without braces and/or a fence', () => {
    const prose = fc.string({ unit: 'grapheme' }).map((s) => s.replace(/[{}[\]]/g, ''));
    const tool = fc.string({ minLength: 1, unit: 'grapheme' });
    const args = fc.dictionary(fc.string({ unit: 'grapheme' }), fc.jsonValue());
    fc.assert(
      fc.property(
        prose,
        tool,
        args,
        prose,
        fc.constantFrom('none', 'json', 'bare'),
        (before, name, argv, after, fence) => {
          const json = JSON.stringify({ tool: name, args: argv });
          const body =
            fence === 'none' ? json : '```' + (fence === 'json' ? 'json' : '') + '\n' + json + '\n```';
          const expected = JSON.parse(json) as { tool: string; args: unknown };
          expect(parseJsonReply(before + body + after)).toEqual({ kind: 'actions', actions: [expected] });
        },
      ),
    );
  });
});

describe('the shortcut for a reply that is one strict JSON object', () => {
  // It parses such a reply at once instead of scanning it: it must come to what the scan comes to.
  const key = fc.constantFrom('tool', 'tools', 'answer', 'args', 'name', 'arguments', 'input', 'x');
  const value = fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    fc.constantFrom('lookup', '', null, '{"id": 1}', "it's {", '```', '"}'),
    fc.array(fc.dictionary(key, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }), { maxLength: 3 }),
  );
  const object = fc.dictionary(key, value, { maxKeys: 4 });
  const space = fc.constantFrom('', ' ', '\n', '\t\n ', '\u00a0', '\ufeff', '\u2028');
  const reply = fc.oneof(
    fc
      .tuple(space, object, space, fc.boolean())
      .map(([before, o, after, pretty]) => `${before}${JSON.stringify(o, null, pretty ? 2 : 0)}${after}`),
    fc.tuple(object, fc.string({ maxLength: 12 })).map(([o, extra]) => `${JSON.stringify(o)}${extra}`),
    fc.string({ maxLength: 40 }).map((t) => `{${t}}`),
  );

  it('comes to the same result as the scan (property)', () => {
    fc.assert(
      fc.property(reply, (text) => {
        expect(parseJsonReply(text)).toEqual(scanReply(text));
      }),
      { numRuns: 3000 },
    );
  });
});
