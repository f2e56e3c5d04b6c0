// What the model sees across a park: a run that waits for a person's decision, or for the child agents it called,
// and resumes in a new run (as on another worker) sends the model its own turns back as it wrote them (tool calls
// byte for byte), each result as a tool message answering its call, every request extending the one before, and no
// tool output in a user or system message. The model here decides from its own turns only: it acts until each of
// its calls has an answer, then answers with what those answers said; a transcript that lost or rewrote its turn
// would make it call again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ApprovalDecision } from '../../../src/kernel/approval.js';
import type { ChatModel } from '../../../src/kernel/chat-model.js';
import { childAgentTool, type ChildOutcome } from '../../../src/kernel/child-calls.js';
import { defineAgent } from '../../../src/kernel/define-agent.js';
import { defineTool } from '../../../src/kernel/tool.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import type { RunState } from '../../../src/kernel/types.js';
import { OpenAIChatModel } from '../../../src/llm/openai-chat-model.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { modelCalls } from '../../../src/testing/transcript.js';
import { MODEL, runWith, testTools, type ToolLog } from '../../support/kernel-harness.js';
import { expectNativeTranscript, recordReplies, type Exchange } from '../../support/native-transcript.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

const analyst = defineAgent({
  name: 'region-analyst',
  description: 'Analyses one region.',
  input: z.object({ region: z.string() }),
  tools: [],
});

function tools(log: ToolLog): ToolRegistry {
  const base = testTools(log).registry;
  const pay = defineTool({
    name: 'pay',
    description: 'Pay an amount to someone.',
    parameters: z.object({ to: z.string(), amount: z.number() }),
    needsApproval: true,
    async execute({ to, amount }) {
      return `paid ${amount} to ${to}`;
    },
  });
  return new ToolRegistry([base.get('lookup')!, base.get('add')!, pay, childAgentTool(analyst)]);
}

/**
 * Reads only its own turns: its first turn makes `calls`; once every call it made has a result, it answers with
 * those results; a call of its own without a result means its turn was lost, and it makes the calls again.
 */
function ownTurnsModel(calls: ScriptedReply & { actions: unknown[] }) {
  return (request: RecordedRequest): ScriptedReply => {
    const own = modelCalls(request.messages);
    if (own.length === 0 || own.some((call) => call.result === undefined)) return calls;
    return { answer: own.map((call) => `${call.tool}: ${call.result}`).join(' | ') };
  };
}

const TURN = {
  actions: [
    { tool: 'lookup', args: { id: 7 }, argumentsText: '{ "id" : 7 }' },
    { tool: 'pay', args: { to: 'acme', amount: 250 }, argumentsText: '{"amount":250,\n "to":"acme"}' },
    { tool: 'region_analyst', args: { region: 'EU' }, argumentsText: '{"region" :"EU"}' },
  ],
};

/** One run parked and resumed as a worker does it: a new run from the checkpoint, each with a recorded model. */
async function parkAndResume(resume: { decision?: ApprovalDecision; child?: Omit<ChildOutcome, 'agent'> }) {
  const first = server.requests.length;
  const exchanges: Exchange[] = [];
  const model = (): ChatModel =>
    recordReplies(new OpenAIChatModel({ model: MODEL, apiKey: 'test', baseURL: server.baseURL }), exchanges)
      .model;
  const log: ToolLog = { executions: [], flaky: { failuresLeft: 0 } };
  let run = await runWith(server, { model: model(), tools: tools(log), log });
  const decisions: Record<string, ApprovalDecision> = {};
  const results: Record<string, ChildOutcome> = {};
  for (let hops = 0; run.result.stopReason.startsWith('awaiting_') && hops < 4; hops++) {
    for (const asked of run.result.awaitingApproval ?? []) decisions[asked.callKey] = resume.decision!;
    for (const child of run.result.awaitingChildren ?? [])
      results[child.callKey] = { ...resume.child!, agent: child.agent };
    run = await runWith(server, {
      model: model(),
      tools: tools(log),
      log,
      checkpoint: run.checkpoints.at(-1) as RunState,
      approvals: { decisions },
      children: { results },
    });
  }
  return { result: run.result, requests: server.requests.slice(first), exchanges };
}

const child = (answer: string): Omit<ChildOutcome, 'agent'> => ({
  jobId: 'child-1',
  status: 'succeeded',
  stopReason: 'answer',
  answer,
  usage: { promptTokens: 100, completionTokens: 10, totalTokens: 110, costUsd: 0.0013 },
});

describe('across a park for a decision and for a child agent, the transcript stays native', () => {
  it('approved: the model reads each of its calls answered, and answers in one more turn', async () => {
    server.reset({ rules: [ownTurnsModel(TURN)] });
    const { result, requests, exchanges } = await parkAndResume({
      decision: { decision: 'approve', by: 'alice' },
      child: child('EU grew 4%'),
    });
    expect(result.stopReason).toBe('answer');
    expect(result.answer).toBe(
      'lookup: {"id":7,"name":"customer-7","email":"c7@example.com"} | pay: paid 250 to acme | region_analyst: EU grew 4%',
    );
    // The first request and the one after both parks: the model's turn was never asked again.
    expect(requests).toHaveLength(2);
    expectNativeTranscript(requests, {
      exchanges,
      toolOutputs: ['customer-7', 'paid 250 to acme', 'EU grew 4%'],
    });
  });

  it('rejected and edited: what the person said is a tool result, never a user or system message', async () => {
    server.reset({ rules: [ownTurnsModel(TURN)] });
    const rejected = await parkAndResume({
      decision: { decision: 'reject', by: 'carol', reason: 'not this month' },
      child: child('EU flat'),
    });
    expect(rejected.result.answer).toContain('pay: rejected by carol: not this month');
    expect(rejected.requests).toHaveLength(2);
    expectNativeTranscript(rejected.requests, {
      exchanges: rejected.exchanges,
      toolOutputs: ['rejected by carol: not this month'],
    });

    server.reset({ rules: [ownTurnsModel(TURN)] });
    const edited = await parkAndResume({
      decision: { decision: 'approve', by: 'dan', arguments: { to: 'acme', amount: 90 } },
      child: child('EU grew 1%'),
    });
    expect(edited.result.answer).toContain('pay: paid 90 to acme');
    expectNativeTranscript(edited.requests, { exchanges: edited.exchanges });
  });
});
