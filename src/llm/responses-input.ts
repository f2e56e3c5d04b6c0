// The kernel's transcript as a Responses API request: the leading system message as `instructions`, every other
// message as an input item. An assistant turn that came from the Responses API goes back as the items it came as
// (its reasoning items with the function calls and message they were produced with, in order); one that did not
// (a turn of a Chat Completions run resumed here, a summary), or came from another model (a run resumed after
// its model changed: the API cannot decrypt another model's reasoning), goes back as the equivalent items.
import type { AssistantMessage, ChatMessage, ResponseItem } from '../kernel/messages.js';

export interface ResponsesInput {
  instructions?: string;
  input: ResponseItem[];
}

/** `model` as the request names it: the turns it returned go back as they came. */
export function responsesInputOf(messages: readonly ChatMessage[], model: string): ResponsesInput {
  const first = messages[0];
  const instructions = first?.role === 'system' ? first.content : undefined;
  const input: ResponseItem[] = [];
  for (const message of instructions === undefined ? messages : messages.slice(1)) {
    switch (message.role) {
      case 'system':
      case 'user':
        input.push({ type: 'message', role: message.role, content: message.content });
        break;
      case 'assistant':
        input.push(...assistantItems(message, model));
        break;
      case 'tool':
        input.push({ type: 'function_call_output', call_id: message.tool_call_id, output: message.content });
        break;
    }
  }
  return { ...(instructions === undefined ? {} : { instructions }), input };
}

function assistantItems(message: AssistantMessage, model: string): ResponseItem[] {
  // A turn kept without its model (a checkpoint written before it was noted) is taken as this model's.
  const ours = message.itemsModel === undefined || message.itemsModel === model;
  if (message.items && ours && carriesTheTurn(message, message.items)) {
    return withoutDanglingReasoning(message.items);
  }
  const items: ResponseItem[] = [];
  if (message.content) items.push({ type: 'message', role: 'assistant', content: message.content });
  for (const call of message.tool_calls ?? []) {
    items.push({
      type: 'function_call',
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
    });
  }
  return items;
}

/** The items hold exactly the turn's calls, in order: nothing in memory changed the turn since it came. */
function carriesTheTurn(message: AssistantMessage, items: readonly ResponseItem[]): boolean {
  const itemCalls = items.filter((item) => item.type === 'function_call');
  const calls = message.tool_calls ?? [];
  return (
    itemCalls.length === calls.length &&
    itemCalls.every(
      (item, i) => item.call_id === calls[i]?.id && item.arguments === calls[i]?.function.arguments,
    )
  );
}

/**
 * The API refuses a reasoning item that nothing follows ("provided without its required following item"): a reply
 * cut at its limit while reasoning is all reasoning, and nothing of it can go back.
 */
function withoutDanglingReasoning(items: readonly ResponseItem[]): ResponseItem[] {
  let end = items.length;
  while (end > 0 && items[end - 1]?.type === 'reasoning') end--;
  return items.slice(0, end);
}
