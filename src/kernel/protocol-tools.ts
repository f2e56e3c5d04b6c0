// The native protocol: tools travel as function definitions, the model answers with `tool_calls`
// (several at once when they are independent) or with a plain message, which is its final answer.
import type { ToolRegistry } from './tool-registry.js';
import { parseJsonReply } from './json-action-parser.js';
import type { AgentProtocol, ParsedTurn, PlannedCall } from './protocol.js';
import { INVALID_EMPTY_REPLY } from './protocol.js';
import type { AssistantMessage, ChatMessage } from './messages.js';

const SYSTEM_PROMPT =
  'You complete the task by calling tools; call independent tools together in one turn. ' +
  'A failed call returns the error: fix the call and go on. ' +
  'When the task is done, reply with the final answer as plain text and no tool call.';

export const toolsProtocol: AgentProtocol = {
  name: 'tools',

  systemPrompt: () => SYSTEM_PROMPT,

  requestTools: (tools: ToolRegistry) => tools.specs,

  parse(reply: AssistantMessage): ParsedTurn {
    const calls = reply.tool_calls ?? [];
    if (calls.length > 0) {
      return {
        kind: 'actions',
        calls: calls.map((call): PlannedCall => ({
          id: call.id,
          name: call.function.name,
          args: parseArguments(call.function.arguments),
        })),
      };
    }
    const text = reply.content?.trim();
    return text ? { kind: 'answer', text } : { kind: 'invalid', observation: INVALID_EMPTY_REPLY };
  },

  observationMessages(calls, outputs): ChatMessage[] {
    return calls.map((call, i) => ({ role: 'tool', tool_call_id: call.id, content: outputs[i] ?? '' }));
  },

  finalTurnInstruction: (why) =>
    `${why} No more tool calls. Reply now with your best final answer from what you know; say what is missing.`,

  parseFinalAnswer(reply) {
    const text = reply.content?.trim();
    if (!text) return null;
    // Without tool definitions some models fall back to JSON; take the answer out of it.
    if (/^(\{|```)/.test(text)) {
      const parsed = parseJsonReply(text);
      if (parsed.kind === 'answer') return parsed.answer;
    }
    return text;
  },

  outputInstructions: (jsonSchema) =>
    'Your final answer (the message without tool calls) must be exactly one JSON object, valid against this ' +
    `JSON Schema, with nothing before or after it:\n${jsonSchema}`,

  finalOutputInstruction: (why) =>
    `${why} No more tool calls. Reply now with the JSON object of the output schema, from what you know.`,

  // Taken whole: the schema may have keys of its own named "answer" or "tool".
  finalOutputText: (reply) => reply.content?.trim() || null,
};

function parseArguments(text: string): PlannedCall['args'] {
  if (text.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}
