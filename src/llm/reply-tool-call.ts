// A tool call as an endpoint returned it, held to its shape before the kernel sees it: an id, a name and an argument
// string. A call without them cannot be run, answered or sent back (the next request would be refused with a
// 400 that fails the run), so a reply carrying one is a garbled reply: retried, and charged as one.
import { ModelApiError } from '../kernel/errors.js';
import type { ToolCallRequest } from '../kernel/messages.js';

export function replyToolCall(id: unknown, name: unknown, args: unknown): ToolCallRequest {
  if (typeof id !== 'string' || id === '' || typeof name !== 'string' || name === '') {
    throw malformedReply('a tool call without its id or name');
  }
  if (typeof args !== 'string')
    throw malformedReply(`a call of ${name.slice(0, 64)} without an argument string`);
  return { id, type: 'function', function: { name, arguments: args } };
}

export function malformedReply(what: string): ModelApiError {
  return new ModelApiError('malformed_response', `The model endpoint's reply is malformed: ${what}.`, {
    retryable: true,
  });
}
