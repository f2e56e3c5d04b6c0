// How a run its cancel reached ends: cancelled with who cancelled (also a run that parked just as the cancel came,
// which must neither wait for a person nor start children), its pending approvals withdrawn; a run that ended by
// itself, or one stopped by the worker shutting down, keeps its result.
import { describe, expect, it } from 'vitest';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import type { AgentResult } from '../../../src/kernel/types.js';
import { cancelledSignal, endAsCancelled, isCancelAbort } from '../../../src/worker/task-cancel.js';
import { SHUTDOWN_REASON } from '../../../src/worker/task-processor.js';

const log = pino({ level: 'silent' });
const job = { id: '7', timestamp: 100 } as unknown as Job;
const mark = { by: 'ops', at: Date.parse('2025-01-02T03:04:05.000Z'), instance: '100' };
const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15, costUsd: 0.001 };

function result(fields: Partial<AgentResult>): AgentResult {
  return {
    jobId: '7',
    status: 'stopped',
    stopReason: 'cancelled',
    answer: null,
    steps: 1,
    toolCalls: 1,
    usage,
    error: null,
    ...fields,
  };
}

function deps(stored: string | null = null) {
  const withdrawn: string[] = [];
  return {
    withdrawn,
    deps: {
      redis: { get: async () => stored } as unknown as Redis,
      env: { QUEUE_PREFIX: 'p' },
      approvals: {
        withdraw: async (jobId: string) => {
          withdrawn.push(jobId);
          return 1;
        },
      },
    },
  };
}

describe('endAsCancelled', () => {
  it('a cancelled run says who cancelled, and its approvals are withdrawn', async () => {
    const { deps: d, withdrawn } = deps();
    const ended = await endAsCancelled(d, job, result({}), cancelledSignal(), mark, log);
    expect(ended).toEqual(result({ stopDetail: 'cancelled by ops at 2025-01-02T03:04:05.000Z' }));
    expect(withdrawn).toEqual(['7']);
  });

  it('a run that parked as the cancel came ends cancelled, waiting on nothing', async () => {
    const { deps: d } = deps();
    const parked = result({
      status: 'stopped',
      stopReason: 'awaiting_children',
      awaitingChildren: [{ callKey: 'k', agent: 'helper', input: {}, budget: {} } as never],
    });
    const ended = await endAsCancelled(d, job, parked, cancelledSignal(), mark, log);
    expect(ended).toMatchObject({ status: 'stopped', stopReason: 'cancelled', usage });
    expect(ended).not.toHaveProperty('awaitingChildren');
  });

  it('reads the mark when the cancel came mid-run, ignoring one left for an earlier job of the id', async () => {
    const own = deps(JSON.stringify(mark));
    const ended = await endAsCancelled(own.deps, job, result({}), cancelledSignal(), null, log);
    expect(ended.stopDetail).toMatch(/^cancelled by ops/);
    const earlier = deps(JSON.stringify({ ...mark, instance: '99' }));
    const bare = await endAsCancelled(earlier.deps, job, result({}), cancelledSignal(), null, log);
    expect(bare).toEqual(result({}));
  });

  it('leaves alone a run that ended by itself, and a run stopped by the worker shutting down', async () => {
    const { deps: d, withdrawn } = deps();
    const answered = result({ status: 'succeeded', stopReason: 'answer', answer: 'done' });
    expect(await endAsCancelled(d, job, answered, cancelledSignal(), mark, log)).toBe(answered);
    const shutdown = AbortSignal.abort(SHUTDOWN_REASON);
    expect(isCancelAbort(shutdown)).toBe(false);
    const released = result({});
    expect(await endAsCancelled(d, job, released, shutdown, null, log)).toBe(released);
    expect(withdrawn).toEqual([]);
  });

  it('a store that cannot withdraw the approvals does not keep the run from ending', async () => {
    const { deps: d } = deps();
    d.approvals.withdraw = async () => {
      throw new Error('store down');
    };
    const ended = await endAsCancelled(d, job, result({}), cancelledSignal(), mark, log);
    expect(ended.stopReason).toBe('cancelled');
  });
});
