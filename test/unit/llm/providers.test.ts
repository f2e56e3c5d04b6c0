// The providers the fleet is tested against, each with the scripted server behaving as that provider documents
// it: Azure OpenAI (deployment URL, `api-version`, `api-key` header, through the `openai` package's Azure client)
// and an OpenAI-compatible local server (no key, no usage reported: estimated and flagged). OpenAI itself, its
// reasoning models, caching and flex have tests of their own (kernel-reasoning-models, kernel-usage-fields,
// kernel-flex-tier).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEnv } from '../../../config/env.js';
import { priceOf } from '../../../src/llm/price-table.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { modelFactoryFrom } from '../../../src/worker/model-factory.js';
import { runWith } from '../../support/kernel-harness.js';

const script = () => [{ actions: [{ tool: 'lookup', args: { id: 7 } }] }, { answer: 'customer-7' }];

describe('Azure OpenAI', () => {
  let azure: ScriptedModelServer;
  beforeAll(async () => {
    azure = await startScriptedModel({ azure: { deployments: ['prod-gpt-4o'] }, apiKey: 'azure-key-1' });
  });
  afterAll(async () => {
    await azure.close();
  });
  const endpoint = () => new URL(azure.baseURL).origin;

  it('calls the deployment URL with the api-version and the api-key header, priced as the model', async () => {
    azure.reset({ script: script() });
    const env = parseEnv({
      AZURE_OPENAI_ENDPOINT: endpoint(),
      AZURE_OPENAI_API_KEY: 'azure-key-1',
      AZURE_OPENAI_DEPLOYMENT: 'prod-gpt-4o',
    });
    const from = azure.requests.length;
    const { result } = await runWith(azure, {
      model: modelFactoryFrom(env)('gpt-4o', 'chat'),
      price: priceOf('gpt-4o'),
    });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'customer-7' });
    const urls = azure.requests.slice(from).map((r) => r.url);
    expect(urls).toEqual([
      '/openai/deployments/prod-gpt-4o/chat/completions?api-version=2024-10-21',
      '/openai/deployments/prod-gpt-4o/chat/completions?api-version=2024-10-21',
    ]);
    expect(result.usage.estimated).toBeUndefined();
  });

  it("the Responses API: the resource's v1 route, the deployment as the model, the api-key header", async () => {
    azure.reset({ script: script() });
    const env = parseEnv({
      AZURE_OPENAI_ENDPOINT: endpoint(),
      AZURE_OPENAI_API_KEY: 'azure-key-1',
      AZURE_OPENAI_DEPLOYMENT: 'prod-gpt-4o',
    });
    const from = azure.requests.length;
    const { result } = await runWith(azure, {
      model: modelFactoryFrom(env)('gpt-4o', 'responses'),
      price: priceOf('gpt-4o'),
    });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'customer-7' });
    const sent = azure.requests.slice(from);
    expect(sent.map((r) => r.url)).toEqual(['/openai/v1/responses', '/openai/v1/responses']);
    expect(sent.map((r) => r.body.model)).toEqual(['prod-gpt-4o', 'prod-gpt-4o']);
    // A deployment the resource does not have is refused, naming it.
    const missing = parseEnv({ AZURE_OPENAI_ENDPOINT: endpoint(), AZURE_OPENAI_API_KEY: 'azure-key-1' });
    azure.reset({ script: script() });
    const refused = await runWith(azure, {
      model: modelFactoryFrom(missing)('gpt-4o', 'responses'),
      price: priceOf('gpt-4o'),
    });
    expect(refused.result.error?.code).toBe('http_404');
    expect(refused.result.error?.message).toMatch(/deployment for this resource does not exist/);
  });

  it('a wrong key is refused (401, not retried); a missing key stops the worker at start', async () => {
    azure.reset({ script: script() });
    const env = parseEnv({
      AZURE_OPENAI_ENDPOINT: endpoint(),
      AZURE_OPENAI_API_KEY: 'wrong',
      AZURE_OPENAI_DEPLOYMENT: 'prod-gpt-4o',
    });
    const { result } = await runWith(azure, {
      model: modelFactoryFrom(env)('gpt-4o', 'chat'),
      price: priceOf('gpt-4o'),
    });
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error' });
    expect(result.error?.code).toBe('http_401');
    expect(() => modelFactoryFrom(parseEnv({ AZURE_OPENAI_ENDPOINT: endpoint() }))).toThrow(
      /AZURE_OPENAI_API_KEY is not/,
    );
    expect(() => parseEnv({ AZURE_OPENAI_API_VERSION: 'latest' })).toThrow(/AZURE_OPENAI_API_VERSION/);
  });
});

describe('an OpenAI-compatible local server (Ollama, vLLM)', () => {
  let local: ScriptedModelServer;
  beforeAll(async () => {
    local = await startScriptedModel();
  });
  afterAll(async () => {
    await local.close();
  });

  it('needs no key; a reply without usage is estimated, flagged and counted against the budget', async () => {
    local.reset({
      script: [
        { actions: [{ tool: 'lookup', args: { id: 7 } }], usage: false },
        { answer: 'customer-7', usage: false },
      ],
    });
    const env = parseEnv({
      OPENAI_BASE_URL: local.baseURL,
      LLM_PRICES: '{"llama3.1:8b": {"inputPerMillion": 0, "outputPerMillion": 0}}',
    });
    const { result } = await runWith(local, {
      model: modelFactoryFrom(env)('llama3.1:8b', 'chat'),
      price: priceOf('gpt-4o'), // priced as a paid model here, so the estimate shows in the bill
      budget: { maxTokens: 20_000 },
    });
    expect(result.status).toBe('succeeded');
    expect(result.usage.estimated).toBe(true);
    expect(result.usage.promptTokens).toBeGreaterThan(0);
    expect(result.usage.completionTokens).toBeGreaterThan(0);
    expect(result.usage.costUsd).toBeGreaterThan(0);
  });
});
