// The scripted server's prompt caching, as the provider documents it: prompts of at least 1,024 tokens, hits
// in 128-token steps of the longest prefix seen before, per prompt_cache_key (and the prompt's start), an
// expiry. Driven through the real `openai` client over HTTP, as the kernel and the benchmark see it.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { cachedTokensFor } from '../../../src/testing/prompt-cache-emulator.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';

let server: ScriptedModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const LONG = Array.from({ length: 400 }, (_, i) => `fact ${i}: the value is ${i * 7}.`).join('\n');

async function ask(messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[], key?: string) {
  const client = new OpenAI({ apiKey: 'test', baseURL: server!.baseURL, maxRetries: 0 });
  const response = await client.chat.completions.create({
    model: 'gpt-4.1',
    messages,
    max_tokens: 20,
    ...(key ? { prompt_cache_key: key } : {}),
  });
  return {
    prompt: response.usage!.prompt_tokens,
    cached: response.usage!.prompt_tokens_details?.cached_tokens,
  };
}

describe('prompt caching emulation', () => {
  it('serves the shared prefix of a longer prompt in 128-token steps, never a short one', async () => {
    server = await startScriptedModel({ promptCache: true, rules: [() => ({ answer: 'ok' })] });
    const base = [
      { role: 'system' as const, content: LONG },
      { role: 'user' as const, content: 'question one' },
    ];
    const first = await ask(base);
    expect(first.prompt).toBeGreaterThan(1_024);
    expect(first.cached).toBe(0);
    // The same prompt extended: everything before the new message is served, rounded down to 128.
    const second = await ask([
      ...base,
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'two' },
    ]);
    expect(second.cached).toBeGreaterThanOrEqual(1_024);
    expect(second.cached! % 128).toBe(0);
    expect(second.cached).toBeLessThanOrEqual(first.prompt);
    expect(first.prompt - second.cached!).toBeLessThan(128 + 16);
    // A change at the start of the prompt: nothing is shared.
    const changed = await ask([{ role: 'system', content: `X ${LONG}` }, base[1]!]);
    expect(changed.cached).toBe(0);
    // Below 1,024 tokens nothing is ever cached, even when repeated.
    await ask([{ role: 'user', content: 'short' }]);
    expect((await ask([{ role: 'user', content: 'short' }])).cached).toBe(0);
    expect(server.requests.at(-1)?.usage?.cachedPromptTokens).toBe(0);
  });

  it('keeps one cache per prompt_cache_key, and forgets what was unused for the expiry', async () => {
    let now = 1_000_000;
    server = await startScriptedModel({
      promptCache: { ttlMs: 60_000, now: () => now },
      rules: [() => ({ answer: 'ok' })],
    });
    const prompt = [
      { role: 'system' as const, content: LONG },
      { role: 'user' as const, content: 'q' },
    ];
    await ask(prompt, 'agent-a');
    expect((await ask(prompt, 'agent-b')).cached).toBe(0);
    const hit = await ask(prompt, 'agent-a');
    expect(hit.cached).toBe(cachedTokensFor(hit.prompt, hit.prompt));
    now += 59_000;
    expect((await ask(prompt, 'agent-a')).cached).toBeGreaterThan(0);
    now += 61_000;
    expect((await ask(prompt, 'agent-a')).cached).toBe(0);
  });

  it('reports no cached_tokens field when caching is off', async () => {
    server = await startScriptedModel({ rules: [() => ({ answer: 'ok' })] });
    const reply = await ask([{ role: 'user', content: LONG }]);
    expect(reply.cached).toBeUndefined();
  });
});
