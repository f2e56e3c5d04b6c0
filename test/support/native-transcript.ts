// The properties of the transcript a run sends the model, checked on the requests a scripted server recorded for
// one run: every turn goes back as the model wrote it, every result answers its call in a tool message, each
// request extends the one before it, and no tool output ever sits in a user or system message.
import { expect } from 'vitest';
import { isSummaryRequest } from '../../src/kernel/memory.js';
import type { AssistantMessage, ChatMessage } from '../../src/kernel/messages.js';
import type { RecordedRequest } from '../../src/testing/scripted-model-server.js';

export interface TranscriptExpectations {
  /** Texts only a tool returns (a customer's name, a row): none may appear outside a tool message. */
  toolOutputs?: readonly string[];
  /** Requests (by position among the run's step requests) allowed to drop earlier content: a clearing, a fold. */
  cutAt?: ReadonlySet<number>;
}

/** Checks every property over the step requests of one run, in the order they were sent. */
export function expectNativeTranscript(
  recorded: readonly RecordedRequest[],
  expectations: TranscriptExpectations = {},
): void {
  const requests = recorded.filter((r) => !isSummaryRequest(r.messages));
  expect(requests.length).toBeGreaterThan(0);
  const outputs = new Set(expectations.toolOutputs ?? []);
  for (const request of requests) {
    for (const message of request.messages) {
      if (message.role === 'tool' && message.content.length >= 12) outputs.add(message.content);
    }
  }
  for (const [k, request] of requests.entries()) {
    const messages = request.messages;
    expect(messages[0]?.role, `request ${k}: the system prompt first`).toBe('system');
    expect(messages[1]?.role, `request ${k}: the task second`).toBe('user');
    if (request.protocol === 'tools') expectCallsAnswered(messages, k);
    expectNoOutputAboveTool(messages, outputs, k);
    const previous = requests[k - 1];
    if (previous && !expectations.cutAt?.has(k)) {
      // Append-only: the previous prompt whole (the same messages, so the same tokens), then what came after.
      expect(messages.slice(0, previous.messages.length), `request ${k} extends request ${k - 1}`).toEqual(
        previous.messages,
      );
    }
  }
}

/** Every assistant turn's calls are answered by tool messages right after it, one per id, in the model's order. */
function expectCallsAnswered(messages: readonly ChatMessage[], k: number): void {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === 'tool') {
      const turn = [...messages.slice(0, i)].reverse().find((m) => m.role === 'assistant') as
        AssistantMessage | undefined;
      expect(
        turn?.tool_calls?.some((call) => call.id === message.tool_call_id),
        `request ${k}: tool message ${i} answers a call of the turn before it`,
      ).toBe(true);
    }
    if (message.role !== 'assistant' || !message.tool_calls?.length) continue;
    const answers = messages.slice(i + 1, i + 1 + message.tool_calls.length);
    expect(
      answers.map((m) => (m.role === 'tool' ? m.tool_call_id : m.role)),
      `request ${k}: the calls of message ${i} are answered in order`,
    ).toEqual(message.tool_calls.map((call) => call.id));
  }
}

function expectNoOutputAboveTool(
  messages: readonly ChatMessage[],
  outputs: ReadonlySet<string>,
  k: number,
): void {
  for (const [i, message] of messages.entries()) {
    if (message.role !== 'user' && message.role !== 'system') continue;
    for (const output of outputs) {
      expect(
        message.content.includes(output),
        `request ${k}: ${message.role} message ${i} carries tool output`,
      ).toBe(false);
    }
  }
}

/**
 * The turn the model was sent back for a reply it gave: the assistant message that follows the prompt of the request
 * the reply answered, in the next request.
 */
export function turnSentBack(requests: readonly RecordedRequest[], k: number): AssistantMessage {
  const next = requests[k + 1]!.messages[requests[k]!.messages.length];
  expect(next?.role).toBe('assistant');
  return next as AssistantMessage;
}
