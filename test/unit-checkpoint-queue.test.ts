// The kernel's checkpoint queue: one write at a time, in order, the latest waiting checkpoint replacing older
// ones, each a snapshot taken when it was pushed.
import { describe, expect, it } from 'vitest';
import { CheckpointQueue } from '../src/kernel/checkpoint-queue.js';
import type { Checkpoint, RunState } from '../src/kernel/types.js';

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
});
