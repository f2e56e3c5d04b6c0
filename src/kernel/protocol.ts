// What both model protocols have in common: how a reply becomes actions or an answer, and how the
// observations of a turn are written back into memory.
import type { ToolRegistry } from './tool-registry.js';
import type { ProposedCall } from './run-tool-call.js';
import type { AssistantMessage, ChatMessage, ToolSpec } from './messages.js';

export type ProtocolName = 'tools' | 'json';

export interface PlannedCall extends ProposedCall {
  /** The model's call id (native protocol) or one the kernel assigns (`call_<step>_<n>`). */
  id: string;
}

export type ParsedTurn =
  | { kind: 'answer'; text: string }
  | { kind: 'actions'; calls: PlannedCall[] }
  | { kind: 'invalid'; observation: string };

export interface AgentProtocol {
  readonly name: ProtocolName;
  systemPrompt(tools: ToolRegistry): string;
  /** The `tools` field of a step's request; undefined when the protocol lists tools in the prompt. */
  requestTools(tools: ToolRegistry): readonly ToolSpec[] | undefined;
  parse(reply: AssistantMessage, step: number): ParsedTurn;
  /** Messages that follow the assistant's turn in memory: one result per call, in the model's order. */
  observationMessages(calls: readonly PlannedCall[], outputs: readonly string[]): ChatMessage[];
  /** The instruction of the last turn, which has no tools and must answer. */
  finalTurnInstruction(why: string): string;
  /** The answer of that last turn; tolerant, since the model may not follow the format. */
  parseFinalAnswer(reply: AssistantMessage): string | null;
  /** Appended to the system prompt of an agent with an output schema: how the final answer carries it. */
  outputInstructions(jsonSchema: string): string;
  /** The last turn's instruction when the answer must be an output of the schema. */
  finalOutputInstruction(why: string): string;
  /** The text of the last turn's reply to check against the output schema. */
  finalOutputText(reply: AssistantMessage): string | null;
}

export const INVALID_EMPTY_REPLY = 'Your reply was empty. Call a tool, or reply with the final answer.';
