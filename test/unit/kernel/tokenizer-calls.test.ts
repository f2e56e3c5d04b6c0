// How often the kernel hands one text to the tokenizer in a run: a tool's result is counted when it is fitted to
// its limit and must not be counted again by every prompt's bound; a call's arguments are charged by the message's
// count and by the framing bound from one count. Through the real OpenAI adapter over HTTP (tools protocol); the
// tokenizer's module is the one the kernel loads, wrapped to record what it is given.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { runWith } from '../../support/kernel-harness.js';

const counted: string[] = [];
const tokenizer = createRequire(import.meta.url)('gpt-tokenizer/encoding/cl100k_base') as {
  countTokens: (text: string, options?: unknown) => number;
};
const countTokens = tokenizer.countTokens;

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
  tokenizer.countTokens = (text, options) => {
    // The scripted server runs in this process and counts the prompts it is sent: only the kernel's calls count.
    if (!new Error().stack?.includes('/src/testing/')) counted.push(text);
    return countTokens(text, options);
  };
});
afterAll(async () => {
  tokenizer.countTokens = countTokens;
  await server.close();
});

it('counts a tool result and a call’s arguments once each in a run, however many prompts carry them', async () => {
  // Unique to this run, so nothing counted before (by any test in this process) is remembered for it; long
  // enough that the result is counted against its limit.
  const key = `k-${randomBytes(120).toString('hex')}`;
  server.reset({
    script: [
      { actions: [{ tool: 'peek', args: { key } }] },
      { actions: [{ tool: 'add', args: { a: 2, b: 3 } }] },
      { actions: [{ tool: 'add', args: { a: 5, b: 1 } }] },
      { answer: 'done' },
    ],
  });
  // The history verbatim (a window, no facts): what is counted is the messages the prompts carry.
  const { result } = await runWith(server, { protocol: 'tools', options: { memoryWindow: 20 } });
  expect(result.status).toBe('succeeded');
  expect(result.steps).toBe(4);
  const times = (text: string) => counted.filter((t) => t === text).length;
  const output = `value of ${key}`;
  // Three prompts carry the result and the call after it was made.
  expect(times(output)).toBe(1);
  expect(times(JSON.stringify({ key }))).toBe(1);
});
