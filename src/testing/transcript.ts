// How a scripted model reads a request: as a model trained on function calling does, from its own turns. It knows
// what it did from its assistant messages (their tool calls, or over the JSON protocol their text) and what came
// back from the messages answering them, and nothing else: no text the kernel writes about earlier turns is read,
// so a memory that drops or rewrites the model's turns makes these models repeat themselves, as real ones do.
import type { ChatMessage } from '../kernel/messages.js';
import { parseJsonReply } from '../kernel/json-action-parser.js';
import { SUMMARY_HEADING } from '../kernel/memory.js';
import { jsonResultParts } from '../kernel/protocol-json.js';

/** One call of the model's own, with the result that answered it (undefined while none has). */
export interface TranscriptCall {
  id: string;
  tool: string;
  /** The arguments parsed from the model's own argument string; undefined when they do not parse. */
  args: unknown;
  result: string | undefined;
}

export interface TranscriptTurn {
  /** What the model wrote besides its calls (null when nothing). */
  text: string | null;
  calls: TranscriptCall[];
}

/**
 * The model's turns in a request, oldest first. Over native tools a turn's calls are its `tool_calls` and each
 * result the `tool` message answering the call's id; over the JSON protocol its calls are the actions in its text
 * and their result the `Result …` message right after it.
 */
export function modelTurns(messages: readonly ChatMessage[]): TranscriptTurn[] {
  const turns: TranscriptTurn[] = [];
  const byId = new Map<string, TranscriptCall>();
  let previous: TranscriptTurn | undefined;
  for (const message of messages) {
    if (message.role === 'assistant') {
      const turn = assistantTurn(message.content, message.tool_calls, turns.length);
      for (const call of turn.calls) byId.set(call.id, call);
      turns.push(turn);
      previous = turn;
    } else if (message.role === 'tool') {
      const call = byId.get(message.tool_call_id);
      if (call) call.result = message.content;
    } else if (message.role === 'user' && previous && message.content.startsWith('Result')) {
      // The JSON protocol's observation of the turn just before it: one result, or one part per call, found by
      // the tools the turn named (an output of several lines, a cleared one, stays with its own call).
      const parts = jsonResultParts(
        message.content,
        previous.calls.map((call) => call.tool),
      );
      previous.calls.forEach((call, i) => (call.result ??= parts[i]));
      previous = undefined;
    }
  }
  return turns;
}

function assistantTurn(
  content: string | null,
  toolCalls: readonly { id: string; function: { name: string; arguments: string } }[] | undefined,
  index: number,
): TranscriptTurn {
  if (toolCalls && toolCalls.length > 0) {
    return {
      text: content,
      calls: toolCalls.map((call) => ({
        id: call.id,
        tool: call.function.name,
        args: parseArgs(call.function.arguments),
        result: undefined,
      })),
    };
  }
  const parsed = content ? parseJsonReply(content) : null;
  if (parsed?.kind === 'actions') {
    return {
      text: content,
      calls: parsed.actions.map((action, i) => ({
        id: `json_${index}_${i}`,
        tool: action.tool,
        args: action.args,
        result: undefined,
      })),
    };
  }
  return { text: content, calls: [] };
}

function parseArgs(text: string): unknown {
  try {
    return JSON.parse(text || '{}') as unknown;
  } catch {
    return undefined;
  }
}

/** Every call the model has made, oldest first, each with its result. */
export function modelCalls(messages: readonly ChatMessage[]): TranscriptCall[] {
  return modelTurns(messages).flatMap((turn) => turn.calls);
}

/** The results the model has seen for its own calls, oldest first. */
export function observationsIn(messages: readonly ChatMessage[]): string[] {
  return modelCalls(messages).flatMap((call) => (call.result === undefined ? [] : [call.result]));
}

/**
 * How many turns the model has taken, by its own assistant messages (with calls or without, as an answer the kernel
 * sent back for correction); its summary of earlier turns is not a turn.
 */
export function turnsIn(messages: readonly ChatMessage[]): number {
  return modelTurns(messages).filter((turn) => !turn.text?.startsWith(SUMMARY_HEADING)).length;
}

/** The task: the first user message, the one the model was given. */
export function taskOf(messages: readonly ChatMessage[]): string {
  const first = messages.find((m) => m.role === 'user');
  return typeof first?.content === 'string' ? first.content : '';
}
