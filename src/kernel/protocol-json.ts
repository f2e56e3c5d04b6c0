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
    return [
      {
        role: 'user',
        content: jsonResultMessage(
          calls.map((call) => call.name),
          outputs,
        ),
      },
    ];
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

/** The result message of a turn: `Result of <tool>: …` for one call, one `Result <n> (<tool>): …` line per call. */
export function jsonResultMessage(tools: readonly string[], outputs: readonly string[]): string {
  if (tools.length === 1) return `Result of ${tools[0]}: ${outputs[0] ?? ''}`;
  return tools.map((tool, i) => `Result ${i + 1} (${tool}): ${outputs[i] ?? ''}`).join('\n');
}

/**
 * Each call's output in a result message written for calls of these tools (the turn's, in order); undefined for a
 * part not found. Each part's framing is looked for after the one before it, from the tools the model named, so an
 * output of several lines (JSON, a table) stays whole; an output holding the next part's very framing ends early.
 */
export function jsonResultParts(content: string, tools: readonly string[]): (string | undefined)[] {
  if (tools.length === 1) {
    const head = `Result of ${tools[0]}: `;
    return [content.startsWith(head) ? content.slice(head.length) : undefined];
  }
  let from = 0;
  const found = tools.map((tool, i) => {
    const head = `${i === 0 ? '' : '\n'}Result ${i + 1} (${tool}): `;
    const at = i === 0 ? (content.startsWith(head) ? 0 : -1) : content.indexOf(head, from);
    if (at < 0) return null;
    from = at + head.length;
    return { at, body: from };
  });
  return found.map((part, i) => {
    if (!part) return undefined;
    const next = found.slice(i + 1).find((later) => later !== null);
    return content.slice(part.body, next ? next.at : content.length);
  });
}
