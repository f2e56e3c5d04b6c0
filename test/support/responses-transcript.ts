// The Responses API's side of the transcript properties, checked on the requests a scripted server recorded for one
// run: nothing kept at the provider, every item a response returned sent back whole and in order with the calls it
// came with (reasoning items included), and each request's input extending the one before it.
import { expect } from 'vitest';
import { isSummaryRequest } from '../../src/kernel/memory.js';
import type { RecordedRequest } from '../../src/testing/scripted-model-server.js';

type Item = Record<string, unknown>;

export interface ResponsesExpectations {
  /** Requests (by position among the run's step requests) allowed to drop earlier input: a clearing, a fold. */
  clearedAt?: ReadonlySet<number>;
}

export function expectResponsesTranscript(
  recorded: readonly RecordedRequest[],
  expectations: ResponsesExpectations = {},
): void {
  const requests = recorded.filter((r) => !isSummaryRequest(r.messages));
  for (const [k, request] of requests.entries()) {
    expect(request.api, `request ${k} went to /v1/responses`).toBe('responses');
    const body = request.body as Record<string, unknown>;
    expect(body.store, `request ${k}: nothing kept at the provider`).toBe(false);
    expect(body).not.toHaveProperty('messages');
    const input = body.input as Item[];
    const previous = requests[k - 1];
    if (!previous) continue;
    // Every item the previous response returned (those that can go back: not a reasoning item nothing followed)
    // is in this input, whole and in order, right where the previous input ended.
    const returned = returnable(previous.output ?? []);
    if (expectations.clearedAt?.has(k)) continue;
    const before = (previous.body as { input: Item[] }).input;
    expect(input.slice(0, before.length), `request ${k}'s input extends request ${k - 1}'s`).toEqual(before);
    expect(
      input.slice(before.length, before.length + returned.length),
      `request ${k} sends back what response ${k - 1} returned, as it was`,
    ).toEqual(returned);
  }
}

/** Output items as they can be sent back: a trailing reasoning item with nothing after it cannot. */
function returnable(items: readonly Item[]): Item[] {
  let end = items.length;
  while (end > 0 && items[end - 1]?.type === 'reasoning') end--;
  return items.slice(0, end);
}
