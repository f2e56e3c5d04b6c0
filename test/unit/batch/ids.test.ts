// Batch ids end up in agent_runs.batch_id (64 characters) and in the spend ledger's scopes: a task's
// `metadata.batch` must be one, and every id the fleet makes itself (batches, schedule firings) is one.
import { describe, expect, it } from 'vitest';
import { newBatchId } from '../../../src/batch/enqueue-batch.js';
import { firingBatchId } from '../../../src/schedules/schedule-processor.js';
import { scheduleSchema } from '../../../src/schedules/schedule-config.js';
import { validateTask } from '../../../src/queue/task-schema.js';

const withBatch = (batch: unknown) => validateTask({ task: 't', metadata: { batch, report: 'r' } });

describe('metadata.batch', () => {
  it('takes a batch id', () => {
    for (const batch of ['nightly-2026-11-30', 'b', 'x'.repeat(64), 'a.b:c_d-1', null]) {
      expect(withBatch(batch).ok, String(batch)).toBe(true);
    }
  });

  it('refuses anything else, naming the field', () => {
    for (const batch of ['x'.repeat(65), '', 'two words', 'ünï', 'line\nbreak', 42, true]) {
      const validation = withBatch(batch);
      expect(validation.ok, String(batch)).toBe(false);
      if (!validation.ok) expect(validation.issues.map((i) => i.path)).toEqual(['metadata.batch']);
    }
  });

  it('every id the fleet makes is one: new batches and the firings of the longest schedule name', () => {
    expect(withBatch(newBatchId()).ok).toBe(true);
    const longest = 'n'.repeat(51);
    const schedule = { name: longest, cron: '0 2 * * *', batch: { tasks: [{ task: 't' }] } };
    expect(scheduleSchema.safeParse(schedule).success).toBe(true);
    expect(scheduleSchema.safeParse({ ...schedule, name: `${longest}n` }).success).toBe(false);
    const fired = firingBatchId(longest, Date.UTC(2026, 10, 30, 2, 0));
    expect(fired.length).toBeLessThanOrEqual(64);
    expect(withBatch(fired).ok).toBe(true);
  });
});
