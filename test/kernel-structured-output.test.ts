// Structured output at kernel level: a run given an output schema ends with a validated value or says why it
// has none. Driven by the scripted model over HTTP through the real OpenAI adapter.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { strictSchema, StructuredOutput } from '../src/kernel/structured-output.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
} from '../src/testing/scripted-model-server.js';
import { runWith } from './support/kernel-harness.js';

const Digest = z.object({
  region: z.string(),
  total: z.number().min(0),
  top: z.array(z.object({ product: z.string(), units: z.number().int() })),
});
const DIGEST = { region: 'north', total: 1250.5, top: [{ product: 'widget', units: 12 }] };

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());
// A script mistake (say, a text reply where a response format was asked for) must not pass for model behaviour.
afterEach(() => expect(server.failures).toEqual([]));

/** The requests of the current test (the server keeps every request since it started). */
function requestsSince(from: number): RecordedRequest[] {
  return server.requests.slice(from);
}

describe.each(['tools', 'json'] as const)('structured output over the %s protocol', (protocol) => {
  it('ends with the validated value, valid the first time', async () => {
    const from = server.requests.length;
    server.reset({ script: [{ actions: [{ tool: 'lookup', args: { id: 7 } }] }, { output: DIGEST }] });
    const { result, traces } = await runWith(server, { protocol, output: Digest });
    expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer', steps: 2, error: null });
    expect(result.output).toEqual(DIGEST);
    expect(JSON.parse(result.answer!)).toEqual(DIGEST);
    expect(traces.at(-1)).toMatchObject({ kind: 'answer' });
    // The model is told the schema up front.
    const system = String(requestsSince(from)[0]?.messages[0]?.content);
    expect(system).toContain('"units":{"type":"integer"');
    // A normal step never asks for a response format.
    expect(requestsSince(from).map((r) => r.responseFormat)).toEqual([undefined, undefined]);
  });

  it("sends a failing reply's issues, with their paths, back to the model, which corrects it", async () => {
    const from = server.requests.length;
    const bad = { region: 'north', total: -1, top: [{ product: 'widget', units: 'twelve' }] };
    server.reset({ script: [{ output: bad }, { output: DIGEST }] });
    const { result, traces } = await runWith(server, { protocol, output: Digest });
    expect(result).toMatchObject({ status: 'succeeded', steps: 2, error: null });
    expect(result.output).toEqual(DIGEST);
    expect(traces.map((t) => t.kind)).toEqual(['invalid', 'answer']);
    const seen = requestsSince(from);
    expect(seen).toHaveLength(2);
    const observation = String(seen[1]?.messages.at(-1)?.content);
    expect(observation).toMatch(/not a valid output/);
    expect(observation).toMatch(/total: Too small/);
    expect(observation).toMatch(/top\.0\.units: Invalid input: expected number/);
    // The correction turn asks for the schema's shape where the protocol can (native tools only).
    if (protocol === 'tools') expect(seen[1]?.responseFormat?.type).toBe('json_schema');
    else expect(seen[1]?.responseFormat).toBeUndefined();
  });

  it('ends a budget stop without a valid value with output null and the reason in error', async () => {
    const from = server.requests.length;
    server.reset({ script: [{ answer: 'the north did well' }, { output: { region: 'north' } }] });
    const { result } = await runWith(server, { protocol, output: Digest, budget: { maxSteps: 2 } });
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'max_steps', steps: 2, output: null });
    expect(result.error).toMatchObject({ kind: 'model_behavior', code: 'output_missing', retryable: false });
    expect(result.error?.message).toMatch(/stopped \(max_steps\) without a valid output/);
    expect(result.error?.message).toMatch(/the last reply failed the schema: total: Invalid input/);
    // The text the model gave is kept as the answer.
    expect(JSON.parse(result.answer!)).toEqual({ region: 'north' });
    expect(requestsSince(from)).toHaveLength(2);
  });
});

describe('structured output over the json protocol', () => {
  it('takes the output object given without the {"answer": …} around it', async () => {
    server.reset({ script: [{ text: JSON.stringify(DIGEST) }] });
    const { result } = await runWith(server, { protocol: 'json', output: Digest });
    expect(result).toMatchObject({ status: 'succeeded', steps: 1, error: null });
    expect(result.output).toEqual(DIGEST);
  });
});

describe('the response format of the final turn (tools protocol)', () => {
  it('asks the budget-forced final turn for the strict JSON Schema, and takes its value', async () => {
    const from = server.requests.length;
    server.reset({ script: [{ actions: [{ tool: 'lookup', args: { id: 7 } }] }, { output: DIGEST }] });
    const { result } = await runWith(server, { output: Digest, budget: { maxSteps: 2 } });
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'max_steps', error: null });
    expect(result.output).toEqual(DIGEST);
    const [step, final] = requestsSince(from);
    expect(step?.responseFormat).toBeUndefined();
    expect(final?.tools).toBeUndefined();
    expect(final?.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'agent_output', schema: expect.any(Object), strict: true },
    });
    const schema =
      final?.responseFormat?.type === 'json_schema' ? final.responseFormat.json_schema.schema : {};
    expect(schema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: ['region', 'total', 'top'],
    });
    expect(String(final?.messages.at(-1)?.content)).toMatch(/JSON object of the output schema/);
  });

  it('keeps the final turn and its response format affordable: a token budget stop still gets the value', async () => {
    for (const maxTokens of [2_500, 4_000, 6_000]) {
      const from = server.requests.length;
      server.reset({
        rules: [
          (request) =>
            request.tools
              ? { actions: [{ tool: 'lookup', args: { id: request.index } }] }
              : { output: DIGEST },
        ],
      });
      const { result } = await runWith(server, {
        output: Digest,
        budget: { maxSteps: 50, maxTokens, maxCostUsd: 100 },
      });
      expect(result).toMatchObject({ status: 'stopped', stopReason: 'token_budget', error: null });
      expect(result.output).toEqual(DIGEST);
      expect(result.usage.totalTokens).toBeLessThanOrEqual(maxTokens);
      expect(requestsSince(from).at(-1)?.responseFormat?.type).toBe('json_schema');
    }
  });

  it('counts the response format in the budget: a final turn that writes all it may stays within maxTokens', async () => {
    // The final reply fills every completion token it is given, so any prompt the estimate missed shows.
    const endless = { ...DIGEST, region: 'north '.repeat(4_000) };
    for (let maxTokens = 2_000; maxTokens <= 4_000; maxTokens += 250) {
      server.reset({
        rules: [
          (request) =>
            request.tools
              ? { actions: [{ tool: 'lookup', args: { id: request.index } }] }
              : { output: endless },
        ],
      });
      const { result } = await runWith(server, {
        output: Digest,
        budget: { maxSteps: 50, maxTokens, maxCostUsd: 100 },
        options: { completionTokens: 4_000 },
      });
      expect(result.stopReason).toBe('token_budget');
      expect(result.usage.totalTokens).toBeLessThanOrEqual(maxTokens);
    }
  });

  it('drops response_format for the rest of the run once the endpoint refuses it with a 400', async () => {
    const refusing = await startScriptedModel({
      refuseResponseFormat: true,
      script: [{ output: { region: 'north' } }, { output: { region: 'north', total: 3, top: [] } }],
    });
    try {
      const { result, traces } = await runWith(refusing, { output: Digest });
      expect(result).toMatchObject({ status: 'succeeded', steps: 2, error: null });
      expect(result.output).toEqual({ region: 'north', total: 3, top: [] });
      // Step 1 answers badly; step 2 (the correction) asks with response_format, is refused, asks again without
      // it, and no request after that carries it.
      expect(refusing.requests.map((r) => r.responseFormat?.type)).toEqual([
        undefined,
        'json_schema',
        undefined,
      ]);
      expect(traces.at(-1)).toMatchObject({ kind: 'answer', modelCalls: 2 });
      expect(refusing.failures).toEqual([]);
    } finally {
      await refusing.close();
    }
  });

  it('remembers the refusal for a final turn after it', async () => {
    const refusing = await startScriptedModel({
      refuseResponseFormat: true,
      script: [{ answer: 'not json' }, { answer: 'still not json' }, { output: DIGEST }],
    });
    try {
      const { result } = await runWith(refusing, { output: Digest, budget: { maxSteps: 3 } });
      expect(result).toMatchObject({ status: 'stopped', stopReason: 'max_steps', error: null });
      expect(result.output).toEqual(DIGEST);
      expect(refusing.requests.map((r) => r.responseFormat?.type)).toEqual([
        undefined,
        'json_schema',
        undefined,
        undefined,
      ]);
    } finally {
      await refusing.close();
    }
  });
});

describe('resuming a run with an output schema', () => {
  it('keeps the pending correction and the refused response format across a resume', async () => {
    const refusing = await startScriptedModel({
      refuseResponseFormat: true,
      script: [{ answer: 'not json' }, { answer: 'still not json' }, { output: DIGEST }],
    });
    let checkpoints;
    try {
      ({ checkpoints } = await runWith(refusing, { output: Digest, budget: { maxSteps: 3 } }));
    } finally {
      await refusing.close();
    }
    const afterStep = (steps: number) => checkpoints.find((c) => c.steps === steps && c.result === null)!;
    expect(afterStep(1)).toMatchObject({ outputIssues: expect.stringMatching(/not JSON/) });
    expect(afterStep(1).responseFormatRefused).toBeUndefined();
    expect(afterStep(2)).toMatchObject({ responseFormatRefused: true });

    // After step 1 the next turn is a correction: resumed, it still asks for the schema's shape.
    let from = server.requests.length;
    server.reset({ script: [{ output: DIGEST }] });
    const corrected = await runWith(server, { output: Digest, checkpoint: afterStep(1) });
    expect(corrected.result.output).toEqual(DIGEST);
    expect(requestsSince(from).map((r) => r.responseFormat?.type)).toEqual(['json_schema']);

    // After the refusal, the resumed run's final turn does not ask again.
    from = server.requests.length;
    server.reset({ script: [{ output: DIGEST }] });
    const final = await runWith(server, { output: Digest, checkpoint: afterStep(2) });
    expect(final.result).toMatchObject({ stopReason: 'max_steps', output: DIGEST, error: null });
    expect(requestsSince(from).map((r) => r.responseFormat)).toEqual([undefined]);
  });
});

describe('strict schemas', () => {
  it('closes every object and keeps what strict mode takes', () => {
    const format = new StructuredOutput(Digest).responseFormat;
    expect(format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } });
  });

  it('falls back to json_object when a property is optional or a map is open', () => {
    expect(new StructuredOutput(z.object({ a: z.string().optional() })).responseFormat).toEqual({
      type: 'json_object',
    });
    expect(new StructuredOutput(z.object({ m: z.record(z.string(), z.number()) })).responseFormat).toEqual({
      type: 'json_object',
    });
    expect(strictSchema({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] })).toEqual({
      type: 'object',
      properties: { a: { type: 'string' } },
      required: ['a'],
      additionalProperties: false,
    });
  });

  it("leaves out z.int()'s safe-integer bounds, which cost tokens and say nothing", () => {
    const schema = new StructuredOutput(z.object({ n: z.number().int(), m: z.number().int().min(1) }))
      .jsonSchema;
    expect(schema.properties).toEqual({ n: { type: 'integer' }, m: { type: 'integer', minimum: 1 } });
  });

  it('asks for no response format when the output is not an object', () => {
    expect(new StructuredOutput(z.array(z.string())).responseFormat).toBeNull();
  });
});
