// The JSON-in-text protocol, for endpoints without function calling: the system prompt lists the tools and
// the model answers with one JSON object in its text. Parsing is lenient (see json-action-parser).
import type { ToolRegistry } from './tool-registry.js';
import { parseJsonReply } from './json-action-parser.js';
import type { AgentProtocol, ParsedTurn } from './protocol.js';
import { INVALID_EMPTY_REPLY } from './protocol.js';
import type { AssistantMessage, ChatMessage } from './messages.js';

export const jsonProtocol: AgentProtocol = {
  name: 'json',

  systemPrompt: (tools: ToolRegistry) =>
    'You complete the task by calling tools. Tools:\n' +
    `${tools.describeForPrompt()}\n` +
    'Reply with exactly one JSON object and nothing else: {"tool": "<name>", "args": {...}}, or ' +
    '{"tools": [{"tool": ..., "args": ...}, ...]} for independent calls, or {"answer": "<final answer>"} when done. ' +
    'A failed call returns the error: fix the call and go on.',

  requestTools: () => undefined,

  parse(reply: AssistantMessage, step: number): ParsedTurn {
    const text = reply.content ?? '';
    if (text.trim() === '') return { kind: 'invalid', observation: INVALID_EMPTY_REPLY };
    const parsed = parseJsonReply(text);
    switch (parsed.kind) {
      case 'answer':
        return { kind: 'answer', text: parsed.answer };
      case 'invalid':
        return { kind: 'invalid', observation: parsed.reason };
      case 'actions':
        return {
          kind: 'actions',
          calls: parsed.actions.map((action, i) => ({
            id: `call_${step}_${i + 1}`,
            name: action.tool,
            args: { ok: true, value: action.args },
          })),
        };
    }
  },

  observationMessages(calls, outputs): ChatMessage[] {
    const content =
      calls.length === 1
        ? `Result of ${calls[0]?.name}: ${outputs[0] ?? ''}`
        : calls.map((call, i) => `Result ${i + 1} (${call.name}): ${outputs[i] ?? ''}`).join('\n');
    return [{ role: 'user', content }];
  },

  finalTurnInstruction: (why) =>
    `${why} No more tools. Reply now with {"answer": "<your best final answer from what you know; say what is missing>"}.`,

  parseFinalAnswer(reply: AssistantMessage): string | null {
    const text = reply.content?.trim();
    if (!text) return null;
    const parsed = parseJsonReply(text);
    return parsed.kind === 'answer' ? parsed.answer : text;
  },

  outputInstructions: (jsonSchema) =>
    'When done, the answer is not text but one JSON object: reply {"answer": <that object>}, the object valid ' +
    `against this JSON Schema:\n${jsonSchema}`,

  finalOutputInstruction: (why) =>
    `${why} No more tools. Reply now with {"answer": <the JSON object of the output schema, from what you know>}.`,

  finalOutputText: (reply) => jsonProtocol.parseFinalAnswer(reply),
};
