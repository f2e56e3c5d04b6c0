// End to end through the kernel: the scripted model over HTTP calls a tool of a real MCP server (stdio),
// sees the MCP JSON Schema in its function definitions, and reads the tool's observation in the next request.
import { observationsIn } from '../../../../src/testing/transcript.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/logging/logger.js';
import { loadMcpTools } from '../../../../src/tools/mcp/load-mcp-tools.js';
import { ToolRegistry } from '../../../../src/kernel/tool-registry.js';
import {
  startScriptedModel,
  type ScriptedModelServer,
} from '../../../../src/testing/scripted-model-server.js';
import { runWith } from '../../../support/kernel-harness.js';
import { startHttpMcpServer } from '../../../fixtures/mcp-http-server.js';
import { stdioServer } from '../../../support/mcp-fixtures.js';

let model: ScriptedModelServer;
let loaded: Awaited<ReturnType<typeof loadMcpTools>>;
let tools: ToolRegistry;
beforeAll(async () => {
  model = await startScriptedModel();
  loaded = await loadMcpTools([stdioServer()], createLogger('kernel-mcp-test', 'silent'));
  tools = new ToolRegistry(loaded.tools);
}, 30_000);
afterAll(async () => {
  await loaded?.close();
  await model?.close();
});

describe('an MCP tool in a run', () => {
  it('the model calls it and its observation reaches the next request', async () => {
    model.reset({
      script: [
        { actions: [{ tool: 'local_plan_trip', args: { destination: 'paris', options: { nights: 3 } } }] },
        { answer: 'Trip planned.' },
      ],
    });
    const { result } = await runWith(model, { tools, task: 'Plan a trip to Paris for three nights.' });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'Trip planned.' });
    const first = model.requests.at(-2)!;
    const spec = first.tools?.find((tool) => tool.function.name === 'local_plan_trip');
    expect(spec?.function.parameters).toMatchObject({ required: ['destination', 'options'] });
    const observation = observationsIn(model.requests.at(-1)!.messages).at(-1);
    expect(observation).toBe('planned {"destination":"paris","options":{"nights":3}}');
  });

  it('over the json protocol the prompt lists its parameters, and the call works the same', async () => {
    model.reset({
      script: [{ actions: [{ tool: 'local_echo', args: { text: 'json' } }] }, { answer: 'done' }],
    });
    const { result } = await runWith(model, { tools, protocol: 'json' });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'done' });
    const system = String(model.requests.at(-2)!.messages[0]!.content);
    expect(system).toContain(
      '- local_plan_trip(destination: string, travellers?: integer, options: object): Plan a trip.',
    );
    expect(JSON.stringify(model.requests.at(-1)!.messages.at(-1))).toContain('echo: json');
  });

  it('a refused call comes back to the model as an observation, and the run goes on', async () => {
    model.reset({
      script: [{ actions: [{ tool: 'local_refuse', args: {} }] }, { answer: 'Could not: quota.' }],
    });
    const { result } = await runWith(model, { tools });
    expect(result.status).toBe('succeeded');
    expect(String(model.requests.at(-1)!.messages.at(-1)!.content)).toBe(
      'Error: quota exceeded for this account',
    );
  });

  it('arguments that break the MCP schema are refused by the kernel before the call', async () => {
    model.reset({
      script: [
        { actions: [{ tool: 'local_plan_trip', args: { destination: 'oslo', options: { nights: 1 } } }] },
        { answer: 'ok' },
      ],
    });
    await runWith(model, { tools });
    expect(String(model.requests.at(-1)!.messages.at(-1)!.content)).toMatch(
      /^Invalid arguments for local_plan_trip: destination: /,
    );
  });

  it('a tool whose server is down ends the attempt retryable; the model never sees the failure', async () => {
    const remote = await startHttpMcpServer();
    const down = await loadMcpTools(
      [{ name: 'remote', url: remote.url, readOnly: true }],
      createLogger('kernel-mcp-test', 'silent'),
    );
    try {
      await remote.stop();
      model.reset({
        script: [{ actions: [{ tool: 'remote_echo', args: { text: 'hi' } }] }, { answer: 'ok' }],
      });
      const { result } = await runWith(model, {
        tools: new ToolRegistry(down.tools),
        options: { infraRetries: 1, infraRetryBaseDelayMs: 5 },
      });
      expect(result.error).toMatchObject({ code: 'tool_unavailable', retryable: true });
      expect(model.requests.at(-1)!.messages.some((m) => m.role === 'tool')).toBe(false);
    } finally {
      await down.close();
    }
  }, 30_000);
});
