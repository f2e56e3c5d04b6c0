// The checker of the native transcript (test/support/native-transcript.ts) is only worth what it refuses: each
// property, broken once on a small run of hand-written requests, must fail it.
import { describe, expect, it } from 'vitest';
import { clearedResult, summaryMessage } from '../../../src/kernel/memory.js';
import type { AssistantMessage, ChatMessage } from '../../../src/kernel/messages.js';
import type { RecordedRequest } from '../../../src/testing/scripted-model-server.js';
import { expectNativeTranscript, type Exchange } from '../../support/native-transcript.js';

const PINNED: ChatMessage[] = [
  { role: 'system', content: 'You look customers up.' },
  { role: 'user', content: 'Find customer 7.' },
];
const OUTPUT = '{"id":7,"name":"customer-7"}';

const turn = (id: string, args = '{ "id" : 7 }'): AssistantMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'lookup', arguments: args } }],
});
const result = (id: string, content = OUTPUT): ChatMessage => ({ role: 'tool', tool_call_id: id, content });

function request(index: number, messages: ChatMessage[]): RecordedRequest {
  return {
    index,
    body: {},
    messages,
    tools: [],
    responseFormat: undefined,
    protocol: 'tools',
    api: 'chat',
    receivedAt: 0,
    url: '/v1/chat/completions',
  };
}

/** Three requests of a run that called lookup twice and answered, as it should be sent. */
function goodRun(): { requests: RecordedRequest[]; exchanges: Exchange[] } {
  const first = [...PINNED];
  const second = [...first, turn('call_a'), result('call_a')];
  const third = [...second, turn('call_b'), result('call_b')];
  const requests = [request(0, first), request(1, second), request(2, third)];
  const replies = [turn('call_a'), turn('call_b'), { role: 'assistant' as const, content: 'customer-7' }];
  return { requests, exchanges: requests.map((r, i) => ({ messages: r.messages, reply: replies[i]! })) };
}

describe('the native transcript checker', () => {
  it('passes a run sent as it should be', () => {
    const { requests, exchanges } = goodRun();
    expectNativeTranscript(requests, { exchanges, toolOutputs: [OUTPUT] });
  });

  it('refuses arguments not sent as the model wrote them', () => {
    const { requests, exchanges } = goodRun();
    const reformatted = turn('call_a', '{"id":7}');
    requests[1]!.messages[2] = reformatted;
    requests[2]!.messages[2] = reformatted;
    expect(() => expectNativeTranscript(requests, { exchanges })).toThrow(/as the model wrote it|as it was/);
  });

  it('refuses tool output in a user message, and in the summary', () => {
    const inUser = goodRun();
    inUser.requests[2]!.messages.push({ role: 'user', content: `Tool results so far: ${OUTPUT}` });
    expect(() => expectNativeTranscript(inUser.requests)).toThrow(/user message 6 carries tool output/);
    const inSummary = goodRun();
    const folded = [
      ...PINNED,
      summaryMessage(`- I called lookup → ${OUTPUT}`),
      turn('call_b'),
      result('call_b'),
    ];
    inSummary.requests[2] = request(2, folded);
    expect(() => expectNativeTranscript(inSummary.requests)).toThrow(
      /assistant message 2 carries tool output/,
    );
  });

  it('refuses a result cleared where no clearing is recorded, a stub naming another tool, and a clearing undone', () => {
    const stub = clearedResult('lookup', 12);
    const unrecorded = goodRun();
    unrecorded.requests[2]!.messages[3] = result('call_a', stub);
    expect(() => expectNativeTranscript(unrecorded.requests)).toThrow(/extends request 1/);
    expectNativeTranscript(unrecorded.requests, { clearedAt: new Set([2]) });

    const misnamed = goodRun();
    misnamed.requests[2]!.messages[3] = result('call_a', clearedResult('sql_query', 12));
    expect(() => expectNativeTranscript(misnamed.requests, { clearedAt: new Set([2]) })).toThrow(
      /stub of call_a names lookup/,
    );

    const undone = goodRun();
    undone.requests[1]!.messages[3] = result('call_a', stub);
    expect(() => expectNativeTranscript(undone.requests, { clearedAt: new Set([1, 2]) })).toThrow(
      /call_a stays cleared/,
    );
  });

  it('refuses a turn dropped without a summary, and a result answering an older turn', () => {
    const dropped = goodRun();
    dropped.requests[2] = request(2, [...PINNED, turn('call_b'), result('call_b')]);
    expect(() => expectNativeTranscript(dropped.requests)).toThrow(/extends request 1/);

    const misplaced = goodRun();
    misplaced.requests[2] = request(2, [
      ...PINNED,
      turn('call_a'),
      turn('call_b'),
      result('call_b'),
      result('call_a'),
    ]);
    expect(() => expectNativeTranscript(misplaced.requests)).toThrow(/answered in order|right before it/);
  });

  it('refuses another system prompt or task on a later request, and a system message among the turns', () => {
    const changed = goodRun();
    changed.requests[2]!.messages[1] = { role: 'user', content: 'Find customer 8.' };
    expect(() => expectNativeTranscript(changed.requests)).toThrow(/the task second/);
    const system = goodRun();
    system.requests[2]!.messages.push({ role: 'system', content: 'Answer now.' });
    expect(() => expectNativeTranscript(system.requests)).toThrow(/is a turn, a result or kernel text/);
  });
});
