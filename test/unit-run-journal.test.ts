// The process-wide run journal: the run starts and traces of several jobs go to MySQL in one statement each, a job
// that ends has the waiting batch written at once, and a failed statement fails every writer whose rows were in it.
import { describe, expect, it } from 'vitest';
import type { StepTrace } from '../src/agent/types.js';
import type { RunsRepository, StartRunInput, StepRowInput } from '../src/store/runs-repository.js';
import { RunJournal } from '../src/worker/run-journal.js';

const trace = (step: number) => ({ step }) as StepTrace;

const start = (jobId: string) =>
  ({ jobId, task: 't', model: 'm', protocol: 'json', attempt: 1 }) as StartRunInput;

function fakeRepository(fail = false) {
  const statements: StepRowInput[][] = [];
  const log: string[] = [];
  const repository = {
    startRuns: async (inputs: readonly StartRunInput[]) => {
      if (inputs.length > 0) log.push(`starts ${inputs.map((i) => i.jobId).join(',')}`);
      if (fail) throw new Error('store down');
    },
    appendStepRows: async (rows: readonly StepRowInput[]) => {
      if (rows.length === 0) return;
      statements.push([...rows]);
      log.push(`steps ${rows.map((r) => `${r.jobId}:${r.trace.step}`).join(',')}`);
      if (fail) throw new Error('store down');
    },
  } as unknown as RunsRepository;
  return { repository, statements, log };
}

describe('RunJournal', () => {
  it('writes the traces of several jobs in one statement after its delay', async () => {
    const { repository, statements } = fakeRepository();
    const sink = new RunJournal(repository, 20);
    const started = Date.now();
    await Promise.all([sink.write('a', [trace(1), trace(2)]), sink.write('b', [trace(1)])]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    expect(statements).toHaveLength(1);
    expect(statements[0]!.map((r) => `${r.jobId}:${r.trace.step}`)).toEqual(['a:1', 'a:2', 'b:1']);
  });

  it('expedite writes the waiting batch without waiting for the delay', async () => {
    const { repository, statements } = fakeRepository();
    const sink = new RunJournal(repository, 60_000);
    const written = sink.write('a', [trace(1)]);
    sink.expedite();
    await written;
    expect(statements).toHaveLength(1);
  });

  it('a batch that reaches its row limit is written at once', async () => {
    const { repository, statements } = fakeRepository();
    const sink = new RunJournal(repository, 60_000, 3);
    await Promise.all([sink.write('a', [trace(1), trace(2)]), sink.write('b', [trace(1)])]);
    expect(statements).toHaveLength(1);
  });

  it('a failed statement rejects every writer of the batch', async () => {
    const { repository } = fakeRepository(true);
    const sink = new RunJournal(repository, 5);
    const results = await Promise.allSettled([sink.write('a', [trace(1)]), sink.write('b', [trace(1)])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });

  it('writes the starts of several runs in one statement, before the traces that came with them', async () => {
    const { repository, log } = fakeRepository();
    const sink = new RunJournal(repository, 20);
    await Promise.all([sink.start(start('a')), sink.write('a', [trace(1)]), sink.start(start('b'))]);
    expect(log).toEqual(['starts a,b', 'steps a:1']);
  });

  it('a failed start rejects the writers of its batch', async () => {
    const { repository } = fakeRepository(true);
    const sink = new RunJournal(repository, 5);
    const results = await Promise.allSettled([sink.start(start('a')), sink.write('b', [trace(1)])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});
