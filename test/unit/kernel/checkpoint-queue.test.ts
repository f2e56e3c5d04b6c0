// The kernel's checkpoint queue: one write at a time, in order, the latest waiting checkpoint replacing older
// ones, each a snapshot taken when it was pushed.
import { describe, expect, it } from 'vitest';
import { CheckpointQueue, StateSerializer } from '../../../src/kernel/checkpoint-queue.js';
import type { ChatMessage } from '../../../src/kernel/messages.js';
import type { Checkpoint, RunState } from '../../../src/kernel/types.js';

const state = (steps: number): RunState => ({
  version: 1,
  runId: 'run-1',
  task: 'a task',
  protocol: 'tools',
  budget: { maxSteps: 8, maxTokens: 1000, maxCostUsd: 1, deadlineMs: 1000 },
  startedAt: 0,
  history: [],
  summary: null,
  usage: { promptTokens: 0, completionTokens: 0 },
  steps,
  toolCalls: 0,
  modelCalls: 0,
  pending: null,
  repeat: { signature: null, count: 0 },
  result: null,
});

/** A store whose writes finish only when the test says so. */
function slowStore() {
  const written: Checkpoint[] = [];
  const finishers: (() => void)[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const write = (checkpoint: Checkpoint) =>
    new Promise<void>((resolve) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      finishers.push(() => {
        inFlight--;
        written.push(checkpoint);
        resolve();
      });
    });
  const finishNext = async () => {
    finishers.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { write, written, finishNext, maxInFlight: () => maxInFlight };
}

describe('CheckpointQueue', () => {
  it('writes one checkpoint at a time, and only the latest of those taken meanwhile', async () => {
    const store = slowStore();
    const queue = new CheckpointQueue(store.write);
    queue.push(state(1));
    queue.push(state(2));
    queue.push(state(3));
    await store.finishNext();
    await store.finishNext();
    await queue.written();
    expect(store.written.map((c) => c.state.steps)).toEqual([1, 3]);
    expect(store.maxInFlight()).toBe(1);
  });

  it('written() waits until the newest checkpoint is written', async () => {
    const store = slowStore();
    const queue = new CheckpointQueue(store.write);
    queue.push(state(1));
    let done = false;
    const waiting = queue.written().then(() => (done = true));
    queue.push(state(2));
    await store.finishNext();
    expect(done).toBe(false);
    await store.finishNext();
    await waiting;
    expect(store.written.at(-1)?.state.steps).toBe(2);
    await queue.written();
  });

  it('a checkpoint is the JSON of the state when it was taken', async () => {
    const written: Checkpoint[] = [];
    const queue = new CheckpointQueue(async (checkpoint) => {
      written.push(checkpoint);
    });
    const live = state(1);
    queue.push(live);
    live.steps = 99;
    live.history.push({ role: 'user', content: 'later' });
    await queue.written();
    expect(JSON.parse(written[0]!.json)).toEqual(state(1));
    expect(written[0]!.state).toEqual(state(1));
  });

  it('is the state JSON.stringify makes, whatever the transcript holds', () => {
    const turns: ChatMessage[] = [
      { role: 'assistant', content: null, tool_calls: [call('c1', '{"sql":"SELECT \\"é\\" -- \\u2028"}')] },
      { role: 'tool', tool_call_id: 'c1', content: 'rows: ["a", "b"]\n</script>' },
      { role: 'assistant', content: 'done' },
    ];
    const serializer = new StateSerializer();
    for (const history of [[], turns.slice(0, 2), turns, [turns[0]!, { ...turns[1]!, content: 'cleared' }]]) {
      const taken = { ...state(3), history, summary: 'earlier', pending: null };
      const json = serializer.json(taken);
      expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify(taken)));
      expect(json.length).toBe(JSON.stringify(taken).length);
    }
    // The kernel appends to its transcript in place, and clears a result by putting a new message at its place.
    const live = { ...state(4), history: [...turns] };
    serializer.json(live);
    live.history[1] = { role: 'tool', tool_call_id: 'c1', content: '(result cleared)' };
    live.history.push({ role: 'user', content: 'and then?' });
    expect(JSON.parse(serializer.json(live))).toEqual(JSON.parse(JSON.stringify(live)));
  });

  it('serializes each message of the transcript once, however many checkpoints carry it', async () => {
    // Every checkpoint holds the whole transcript: serialized anew each time, a run's checkpoints cost the square
    // of its length. A message whose fields are read counts each reading.
    let reads = 0;
    const counted = <T extends object>(message: T): T =>
      new Proxy(message, {
        get(target, key, receiver) {
          if (key === 'content') reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
    const written: Checkpoint[] = [];
    const queue = new CheckpointQueue(async (checkpoint) => {
      written.push(checkpoint);
    });
    const live = state(0);
    for (let step = 1; step <= 20; step++) {
      live.history = [
        ...live.history,
        counted({ role: 'assistant', content: `step ${step}` } satisfies ChatMessage),
      ];
      live.steps = step;
      queue.push(live);
      await queue.written();
    }
    expect(written).toHaveLength(20);
    expect(written[19]!.state.history).toHaveLength(20);
    expect(reads).toBe(20);
  });
});

function call(id: string, args: string) {
  return { id, type: 'function' as const, function: { name: 'sql_query', arguments: args } };
}
