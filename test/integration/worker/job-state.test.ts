// A job's own Redis state (checkpoint, parked traces, kept outcome and its unrecorded entry) goes in one command,
// and a written trace stays parked until then instead of costing one HDEL per write. Real Redis, a prefix of its own.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { StepTrace } from '../../../src/kernel/types.js';
import { createLogger } from '../../../src/logging/logger.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { CheckpointStore } from '../../../src/worker/checkpoint-store.js';
import { forgetJobState } from '../../../src/worker/job-state.js';
import { OutcomeStore } from '../../../src/worker/outcome-store.js';
import type { RunJournal } from '../../../src/worker/run-journal.js';
import { StepWrites } from '../../../src/worker/step-writes.js';
import { parkedTracesKey, TraceWriter } from '../../../src/worker/trace-writer.js';

const PREFIX = `test-job-state-${randomBytes(4).toString('hex')}`;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
const logger = createLogger('test', 'silent');

afterAll(async () => {
  await deleteKeysWithPrefix(redis, PREFIX);
  redis.disconnect();
});

const trace = (step: number) =>
  ({
    step,
    kind: 'action',
    actions: [],
    promptTokens: 1,
    completionTokens: 1,
    latencyMs: 1,
    error: null,
    totals: { steps: step, maxSteps: 8, totalTokens: 2, costUsd: 0 },
  }) as unknown as StepTrace;

describe('a job’s state in Redis', () => {
  it('keeps written traces parked until the job state is forgotten, all of it in one command', async () => {
    const jobId = 'job-1';
    const written: number[] = [];
    const journal = {
      write: async (_job: string, traces: StepTrace[]) => {
        written.push(...traces.map((t) => t.step));
      },
      expedite: () => undefined,
    } as unknown as RunJournal;
    const writer = new TraceWriter(journal, redis, PREFIX, jobId, logger);
    // Parked as each step ends (with its checkpoint, progress and log line), written to MySQL by the writer.
    const steps = new StepWrites(
      redis,
      { id: jobId, queueQualifiedName: `${PREFIX}:agent-tasks`, opts: {} },
      PREFIX,
      logger,
    );
    for (const step of [1, 2]) {
      steps.step(trace(step));
      writer.add(trace(step));
    }
    await Promise.all([writer.flush(), steps.settled()]);
    expect(written).toEqual([1, 2]);
    expect((await redis.hkeys(parkedTracesKey(PREFIX, jobId))).sort()).toEqual(['1', '2']);

    const checkpoints = new CheckpointStore(redis, PREFIX);
    const outcomes = new OutcomeStore(redis, PREFIX);
    await checkpoints.save(jobId, '{"steps":2}');
    await outcomes.keepUnrecorded(jobId, { result: {} as never, started: true, recordTries: 1 });
    await outcomes.keepUnrecorded('other-job', { result: {} as never, started: true, recordTries: 1 });

    await forgetJobState(redis, PREFIX, jobId);
    expect(await redis.exists(parkedTracesKey(PREFIX, jobId))).toBe(0);
    expect(await checkpoints.load(jobId)).toBeNull();
    expect(await outcomes.load(jobId)).toBeNull();
    expect(await outcomes.unrecorded(10)).toEqual(['other-job']);
    expect(await outcomes.load('other-job')).not.toBeNull();
  });
});
