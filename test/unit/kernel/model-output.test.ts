// Every malformed-output path becomes an observation and the loop goes on; parallel calls run concurrently
// and come back in the model's order.
import { observationsIn } from '../../../src/testing/transcript.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import { defineTool } from '../../../src/kernel/tool.js';
import { runWith } from '../../support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

/** The observation the model saw after its first reply: the last message of the second request. */
function observationAfterFirstReply(): string {
  const second = server.requests.at(-1)!;
  return String(second.messages.at(-1)?.content);
}

describe('JSON-in-text protocol', () => {
  it.each([
    ['a code fence', '```json\n{"tool": "lookup", "args": {"id": 7}}\n```'],
    [
      'prose around the object',
      'I will look it up now.\n{"tool": "lookup", "args": {"id": 7}}\nThen I answer.',
    ],
    ['single quotes and a trailing comma', "{'tool': 'lookup', 'args': {'id': 7},}"],
  ])('tolerates %s', async (_name, text) => {
    server.reset({ script: [{ text }, { answer: 'done' }] });
    const { result, log } = await runWith(server, { protocol: 'json' });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'done', steps: 2, toolCalls: 1 });
    expect(log.executions).toEqual([{ tool: 'lookup', args: { id: 7 }, callKey: 'run-1:1:1' }]);
  });

  it('feeds an unparseable reply back and lets the model correct itself', async () => {
    server.reset({
      script: [{ text: 'I think the answer is probably customer seven' }, { answer: 'customer-7' }],
    });
    const { result, traces } = await runWith(server, { protocol: 'json' });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'customer-7', steps: 2, toolCalls: 0 });
    expect(observationAfterFirstReply()).toMatch(/JSON object/);
    expect(traces[0]).toMatchObject({ kind: 'invalid' });
  });

  it('runs several calls of one turn from {"tools": [...]}', async () => {
    server.reset({
      script: [
        {
          text: '{"tools": [{"tool": "lookup", "args": {"id": 1}}, {"tool": "add", "args": {"a": 1, "b": 2}}]}',
        },
        { answer: 'ok' },
      ],
    });
    const { result } = await runWith(server, { protocol: 'json' });
    expect(result).toMatchObject({ status: 'succeeded', toolCalls: 2 });
    // Both results, in the order of the calls, as the facts the auto memory keeps.
    const seen = observationsIn(server.requests.at(-1)!.messages);
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatch(/customer-1/);
    expect(seen[1]).toBe('3');
  });
});

describe.each(['tools', 'json'] as const)('%s protocol: bad actions become observations', (protocol) => {
  it('an unknown tool lists the available ones', async () => {
    server.reset({ script: [{ actions: [{ tool: 'drop_database', args: {} }] }, { answer: 'sorry' }] });
    const { result, log } = await runWith(server, { protocol });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'sorry' });
    expect(log.executions).toEqual([]);
    expect(observationAfterFirstReply()).toMatch(
      /Unknown tool "drop_database". Available tools: lookup, peek, add, slow/,
    );
  });

  it('a tool name that is a property of every object is still unknown', async () => {
    server.reset({ script: [{ actions: [{ tool: 'constructor', args: {} }] }, { answer: 'ok' }] });
    const { result } = await runWith(server, { protocol });
    expect(result.status).toBe('succeeded');
    expect(observationAfterFirstReply()).toMatch(/Unknown tool "constructor"/);
  });

  it('invalid arguments name the field', async () => {
    server.reset({ script: [{ actions: [{ tool: 'add', args: { a: 1, b: 'two' } }] }, { answer: 'ok' }] });
    const { result, log } = await runWith(server, { protocol });
    expect(result.status).toBe('succeeded');
    expect(log.executions).toEqual([]);
    expect(observationAfterFirstReply()).toMatch(/Invalid arguments for add: b: .*number/);
  });

  it('a failing tool is an observation, not a crash', async () => {
    server.reset({ script: [{ actions: [{ tool: 'broken', args: {} }] }, { answer: 'it failed' }] });
    const { result } = await runWith(server, { protocol });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'it failed' });
    expect(observationAfterFirstReply()).toMatch(/Error: disk on fire/);
  });
});

describe('native tool calls', () => {
  it('an empty reply is an observation', async () => {
    server.reset({ script: [{ text: '' }, { answer: 'x' }] });
    const { result } = await runWith(server);
    expect(result).toMatchObject({ status: 'succeeded', steps: 2 });
    expect(observationAfterFirstReply()).toMatch(/Your reply was empty/);
  });

  it('arguments cut off by max_tokens become an observation and the loop goes on', async () => {
    const longSql = 'lorem ipsum dolor '.repeat(100);
    server.reset({
      script: [{ actions: [{ tool: 'lookup', args: { id: 1, note: longSql } }] }, { answer: 'ok' }],
    });
    const { result, log } = await runWith(server, { options: { completionTokens: 80 } });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'ok' });
    expect(log.executions).toEqual([]);
    expect(observationAfterFirstReply()).toMatch(/not valid JSON/);
  });
});

describe('parallel tool calls', () => {
  it('run concurrently and return results in the model order', async () => {
    // Each call waits until both have started: run one after the other, they would time out instead.
    let started = 0;
    let release!: () => void;
    const bothStarted = new Promise<void>((resolve) => (release = resolve));
    const rendezvous = defineTool({
      name: 'rendezvous',
      description: 'Waits for its partner call.',
      parameters: z.object({ name: z.string(), delayMs: z.number() }),
      timeoutMs: 2_000,
      async execute({ name, delayMs }) {
        if (++started === 2) release();
        await bothStarted;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        return `${name} done`;
      },
    });
    server.reset({
      script: [
        {
          actions: [
            { tool: 'rendezvous', args: { name: 'first', delayMs: 60 } },
            { tool: 'rendezvous', args: { name: 'second', delayMs: 0 } },
          ],
        },
        { answer: 'both' },
      ],
    });
    const { result } = await runWith(server, { tools: new ToolRegistry([rendezvous]) });
    expect(result).toMatchObject({ status: 'succeeded', toolCalls: 2 });
    expect(observationsIn(server.requests.at(-1)!.messages)).toEqual(['first done', 'second done']);
  });
});

describe('special-token text', () => {
  // `<|endoftext|>` in a reply or a tool result is text to the endpoint; the tokenizer's default is to throw
  // on it, which ended the run with an error.
  it.each(['json', 'tools'] as const)('is counted as text (%s protocol)', async (protocol) => {
    server.reset({
      script: [
        { actions: [{ tool: 'peek', args: { key: '<|endoftext|>' } }] },
        { answer: 'the value of <|endoftext|> is known <|im_start|>' },
      ],
    });
    const { result } = await runWith(server, { protocol });
    expect(result).toMatchObject({
      status: 'succeeded',
      answer: 'the value of <|endoftext|> is known <|im_start|>',
      toolCalls: 1,
    });
    expect(observationsIn(server.requests.at(-1)!.messages)).toEqual(['value of <|endoftext|>']);
  });
});
