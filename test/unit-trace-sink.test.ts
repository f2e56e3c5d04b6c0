// The process-wide trace sink: the traces of several jobs go to MySQL in one statement, a job that ends has the
// waiting batch written at once, and a failed statement fails every writer whose rows were in it.
import { describe, expect, it } from 'vitest';
import type { StepTrace } from '../src/agent/types.js';
import type { RunsRepository, StepRowInput } from '../src/store/runs-repository.js';
import { TraceSink } from '../src/worker/trace-sink.js';

const trace = (step: number) => ({ step }) as StepTrace;

function fakeRepository(fail = false) {
  const statements: StepRowInput[][] = [];
  const repository = {
    appendStepRows: async (rows: readonly StepRowInput[]) => {
      statements.push([...rows]);
      if (fail) throw new Error('store down');
    },
  } as unknown as RunsRepository;
  return { repository, statements };
}

describe('TraceSink', () => {
  it('writes the traces of several jobs in one statement after its delay', async () => {
    const { repository, statements } = fakeRepository();
    const sink = new TraceSink(repository, 20);
    const started = Date.now();
    await Promise.all([sink.write('a', [trace(1), trace(2)]), sink.write('b', [trace(1)])]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    expect(statements).toHaveLength(1);
    expect(statements[0]!.map((r) => `${r.jobId}:${r.trace.step}`)).toEqual(['a:1', 'a:2', 'b:1']);
  });

  it('expedite writes the waiting batch without waiting for the delay', async () => {
    const { repository, statements } = fakeRepository();
    const sink = new TraceSink(repository, 60_000);
    const written = sink.write('a', [trace(1)]);
    sink.expedite();
    await written;
    expect(statements).toHaveLength(1);
  });

  it('a batch that reaches its row limit is written at once', async () => {
    const { repository, statements } = fakeRepository();
    const sink = new TraceSink(repository, 60_000, 3);
    await Promise.all([sink.write('a', [trace(1), trace(2)]), sink.write('b', [trace(1)])]);
    expect(statements).toHaveLength(1);
  });

  it('a failed statement rejects every writer of the batch', async () => {
    const { repository } = fakeRepository(true);
    const sink = new TraceSink(repository, 5);
    const results = await Promise.allSettled([sink.write('a', [trace(1)]), sink.write('b', [trace(1)])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});
