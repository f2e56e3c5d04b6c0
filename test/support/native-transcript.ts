// The properties of the transcript a run sends the model, checked on the requests a scripted server recorded for
// one run: every turn goes back as the model wrote it (the replies it gave, byte for byte), every result answers its
// call in a tool message, each request extends the one before it (a result cleared only where a clearing is
// recorded, and never sent in full again; turns dropped only into the model's summary), and no tool output ever sits
// in a user or system message or in that summary.
import { expect } from 'vitest';
import type { ChatCallOptions, ChatModel, ChatRequest } from '../../src/kernel/chat-model.js';
import { isCleared, isSummaryRequest, SUMMARY_HEADING } from '../../src/kernel/memory.js';
import type { AssistantMessage, ChatMessage } from '../../src/kernel/messages.js';
import type { RecordedRequest } from '../../src/testing/scripted-model-server.js';

/** One model call as the kernel made it: the messages it sent and the reply it was given. */
export interface Exchange {
  messages: readonly ChatMessage[];
  reply: AssistantMessage;
}

/** A model that records every reply it hands the kernel, in order (what the model "wrote"). */
export function recordReplies(
  model: ChatModel,
  exchanges: Exchange[] = [],
): { model: ChatModel; exchanges: Exchange[] } {
  return {
    exchanges,
    model: {
      model: model.model,
      async complete(request: ChatRequest, options: ChatCallOptions) {
        const completion = await model.complete(request, options);
        exchanges.push({ messages: request.messages, reply: structuredClone(completion.message) });
        return completion;
      },
    },
  };
}

export interface TranscriptExpectations {
  /** Texts only a tool returns (a customer's name, a row): none may appear outside a tool message. */
  toolOutputs?: readonly string[];
  /** Requests (by position among the run's step requests) made right after a clearing: results may become stubs. */
  clearedAt?: ReadonlySet<number>;
  /** The model calls of the run (recordReplies): every turn sent back must be the reply it was, byte for byte. */
  exchanges?: readonly Exchange[];
}

/** The step requests of a run whose traces recorded a clearing before them (request k is step k + 1). */
export function clearingsIn(traces: readonly { step: number; events?: readonly { type: string }[] }[]) {
  return new Set(traces.filter((t) => t.events?.some((e) => e.type === 'clear')).map((t) => t.step - 1));
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
  const clearedIds = new Map<string, string>();
  for (const [k, request] of requests.entries()) {
    const messages = request.messages;
    expectRoles(messages, requests[0]!.messages, k);
    if (request.protocol === 'tools') {
      expectCallsAnswered(messages, k);
      expectStubsNameTheirCall(messages, k);
      expectClearingsKept(messages, clearedIds, k);
    }
    expectNoOutputAboveTool(messages, outputs, request.protocol === 'json', k);
    const previous = requests[k - 1];
    if (previous) expectExtends(previous.messages, messages, expectations.clearedAt?.has(k) ?? false, k);
  }
  if (expectations.exchanges) expectTurnsAsWritten(requests, expectations.exchanges);
}

/** The system prompt, then the task, the same in every request; no other system message; a summary only third. */
function expectRoles(messages: readonly ChatMessage[], first: readonly ChatMessage[], k: number): void {
  expect(messages[0], `request ${k}: the system prompt first, as in the first request`).toEqual(first[0]);
  expect(messages[1], `request ${k}: the task second, as in the first request`).toEqual(first[1]);
  expect(first[0]?.role).toBe('system');
  expect(first[1]?.role).toBe('user');
  for (const [i, message] of messages.entries()) {
    if (i < 2) continue;
    expect(message.role, `request ${k}: message ${i} is a turn, a result or kernel text`).not.toBe('system');
    if (i !== 2) expect(isSummary(message), `request ${k}: a summary only right after the task`).toBe(false);
  }
}

const isSummary = (message: ChatMessage | undefined): boolean =>
  message?.role === 'assistant' && (message.content ?? '').startsWith(`${SUMMARY_HEADING}\n`);

/**
 * Every assistant turn's calls are answered by tool messages right after it, one per id, in the model's order; no
 * id is used twice; no tool message answers anything else.
 */
function expectCallsAnswered(messages: readonly ChatMessage[], k: number): void {
  const ids = messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []));
  expect(new Set(ids).size, `request ${k}: every call id is used once`).toBe(ids.length);
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === 'tool') {
      const turn = [...messages.slice(0, i)].reverse().find((m) => m.role !== 'tool');
      expect(
        turn?.role === 'assistant' && turn.tool_calls?.some((call) => call.id === message.tool_call_id),
        `request ${k}: tool message ${i} answers a call of the turn right before it`,
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

/** A cleared result says which tool's output it was (its own call's) and how to get it back. */
function expectStubsNameTheirCall(messages: readonly ChatMessage[], k: number): void {
  const toolOf = new Map<string, string>();
  for (const message of messages) {
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) toolOf.set(call.id, call.function.name);
    } else if (message.role === 'tool' && isCleared(message.content)) {
      const tool = toolOf.get(message.tool_call_id) ?? '(no call)';
      expect(message.content, `request ${k}: the stub of ${message.tool_call_id} names ${tool}`).toMatch(
        new RegExp(
          `^\\[cleared to save context: the result of ${tool}, \\d+ tokens; call it again if needed\\]$`,
        ),
      );
    }
  }
}

/** Once a result is sent cleared, every later request that still has its message sends the same stub. */
function expectClearingsKept(
  messages: readonly ChatMessage[],
  cleared: Map<string, string>,
  k: number,
): void {
  for (const message of messages) {
    if (message.role !== 'tool') continue;
    const stub = cleared.get(message.tool_call_id);
    if (stub !== undefined) {
      expect(message.content, `request ${k}: ${message.tool_call_id} stays cleared`).toBe(stub);
    } else if (isCleared(message.content)) {
      cleared.set(message.tool_call_id, message.content);
    }
  }
}

/**
 * No tool output in a user or system message, nor in the model's summary (written by the kernel, sent as the model's
 * own words).
 */
function expectNoOutputAboveTool(
  messages: readonly ChatMessage[],
  outputs: ReadonlySet<string>,
  json: boolean,
  k: number,
): void {
  for (const [i, message] of messages.entries()) {
    if (message.role !== 'user' && message.role !== 'system' && !isSummary(message)) continue;
    // The JSON protocol has no tool role: its result message, right after the turn, is the only way it has.
    if (json && messages[i - 1]?.role === 'assistant' && message.content?.startsWith('Result ')) continue;
    for (const output of outputs) {
      expect(
        (message.content ?? '').includes(output),
        `request ${k}: ${message.role} message ${i} carries tool output`,
      ).toBe(false);
    }
  }
}

/**
 * Append-only: the previous request whole, then what came after. After a recorded clearing a result may be its
 * stub instead (the same message, answering the same call); where the summary changed, the oldest turns may be
 * gone into it, and what stays is the end of the previous request as it was.
 */
function expectExtends(
  previous: readonly ChatMessage[],
  current: readonly ChatMessage[],
  cleared: boolean,
  k: number,
): void {
  const before = historyOf(previous);
  const now = historyOf(current);
  let from = 0;
  if (now.summary?.content !== before.summary?.content) {
    // A fold: the turns that stay are the newest of the previous request.
    from = before.turns.findIndex((_, s) => sameTurns(before.turns.slice(s), now.turns, cleared));
    if (from < 0) from = before.turns.length;
    expect(
      now.summary,
      `request ${k}: turns left the transcript only into the model's summary`,
    ).toBeDefined();
    expect(from === 0 || before.turns[from]?.role === 'assistant' || from === before.turns.length).toBe(true);
  }
  const kept = before.turns.slice(from);
  expect(
    sameTurns(kept, now.turns, cleared),
    `request ${k} extends request ${k - 1}${cleared ? ' (results cleared in place)' : ''}`,
  ).toBe(true);
  if (!cleared && from === 0) {
    expect(current.slice(0, previous.length), `request ${k} extends request ${k - 1}`).toEqual(previous);
  }
}

function historyOf(messages: readonly ChatMessage[]): { summary?: ChatMessage; turns: ChatMessage[] } {
  return isSummary(messages[2])
    ? { summary: messages[2], turns: messages.slice(3) }
    : { turns: messages.slice(2) };
}

/** Whether `now` starts with `kept`, each message the same or, after a clearing, its result cleared in place. */
function sameTurns(kept: readonly ChatMessage[], now: readonly ChatMessage[], cleared: boolean): boolean {
  if (now.length < kept.length) return false;
  return kept.every((message, i) => {
    const later = now[i]!;
    if (JSON.stringify(later) === JSON.stringify(message)) return true;
    if (!cleared) return false;
    if (message.role === 'tool' && later.role === 'tool') {
      return later.tool_call_id === message.tool_call_id && isCleared(later.content);
    }
    // Over the JSON protocol: the result message, its framing kept, each call's part a stub.
    return (
      message.role === 'user' &&
      later.role === 'user' &&
      /^Result /.test(message.content) &&
      /\[cleared to save context: /.test(later.content)
    );
  });
}

/**
 * Each reply the model gave that the run sends back (a turn of calls, or a reply sent back for correction) is sent
 * as it was given: the same text, the same call ids, names and argument strings, byte for byte.
 */
function expectTurnsAsWritten(requests: readonly RecordedRequest[], exchanges: readonly Exchange[]): void {
  const steps = exchanges.filter((e) => !isSummaryRequest(e.messages));
  expect(steps.length, 'one reply per step request').toBe(requests.length);
  for (const [k, { reply }] of steps.entries()) {
    const expected: AssistantMessage = reply.tool_calls?.length
      ? {
          role: 'assistant',
          content: reply.content ?? null,
          tool_calls: reply.tool_calls.map((c) => ({
            id: c.id,
            type: 'function',
            function: { name: c.function.name, arguments: c.function.arguments },
          })),
        }
      : { role: 'assistant', content: reply.content ?? '' };
    for (const later of requests.slice(k + 1)) {
      const sent = reply.tool_calls?.length
        ? later.messages.find(
            (m) => m.role === 'assistant' && m.tool_calls?.[0]?.id === reply.tool_calls![0]!.id,
          )
        : undefined;
      if (sent) expect(sent, `the turn of request ${k} as the model wrote it`).toEqual(expected);
    }
    const next = requests[k + 1];
    if (
      !next ||
      historyOf(next.messages).summary?.content !== historyOf(requests[k]!.messages).summary?.content
    )
      continue;
    // Not folded away: right where the request it answered ended.
    expect(
      next.messages[requests[k]!.messages.length],
      `request ${k + 1} sends the reply to request ${k} back as it was`,
    ).toEqual(expected);
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
