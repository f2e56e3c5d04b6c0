// The process-wide run journal: the run starts, traces and finishes of several jobs go to MySQL in one query, a job
// that ends has the waiting batch written at once, and a failed query fails every writer whose rows were in it.
// (The query itself, against the real MariaDB, is in test/integration/store/store.test.ts.)
import { describe, expect, it } from 'vitest';
import type { AgentResult, StepTrace } from '../../../src/kernel/types.js';
import type { JournalEntries, RunsRepository, StartRunInput } from '../../../src/store/runs-repository.js';
import { RunJournal } from '../../../src/worker/run-journal.js';

const trace = (step: number) => ({ step }) as StepTrace;
const start = (jobId: string) =>
  ({ jobId, task: 't', model: 'm', protocol: 'json', attempt: 1 }) as StartRunInput;
const result = (jobId: string) => ({ jobId, status: 'succeeded' }) as AgentResult;

function fakeRepository(
  options: { fail?: boolean; notStarted?: string[]; poison?: string; takesMs?: number } = {},
) {
  const queries: string[] = [];
  const repository = {
    writeJournal: async (entries: JournalEntries) => {
      if (options.takesMs) await new Promise((resolve) => setTimeout(resolve, options.takesMs));
      queries.push(
        [
          entries.starts.length ? `starts ${entries.starts.map((s) => s.jobId).join(',')}` : '',
          entries.steps.length
            ? `steps ${entries.steps.map((r) => `${r.jobId}:${r.trace.step}`).join(',')}`
            : '',
          entries.finishes.length ? `finishes ${entries.finishes.map((f) => f.result.jobId).join(',')}` : '',
        ]
          .filter(Boolean)
          .join(' | '),
      );
      if (options.fail) throw new Error('store down');
      const jobs = [
        ...entries.starts.map((e) => e.jobId),
        ...entries.steps.map((e) => e.jobId),
        ...entries.finishes.map((e) => e.result.jobId),
      ];
      if (options.poison && jobs.includes(options.poison))
        throw new Error('Data too long for column batch_id');
      return { notStarted: options.notStarted ?? [] };
    },
  } as unknown as RunsRepository;
  return { repository, queries };
}

describe('RunJournal', () => {
  it('writes the traces of several jobs in one query after its delay', async () => {
    const { repository, queries } = fakeRepository();
    const journal = new RunJournal(repository, { delayMs: 20 });
    const started = Date.now();
    await Promise.all([journal.write('a', [trace(1), trace(2)]), journal.write('b', [trace(1)])]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    expect(queries).toEqual(['steps a:1,a:2,b:1']);
  });

  it('expedite writes the waiting batch without waiting for the delay', async () => {
    const { repository, queries } = fakeRepository();
    const journal = new RunJournal(repository, { delayMs: 60_000 });
    const written = journal.write('a', [trace(1)]);
    journal.expedite();
    await written;
    expect(queries).toHaveLength(1);
  });

  it('a batch that reaches its row limit is written at once', async () => {
    const { repository, queries } = fakeRepository();
    const journal = new RunJournal(repository, { delayMs: 60_000, maxRows: 3 });
    await Promise.all([journal.write('a', [trace(1), trace(2)]), journal.write('b', [trace(1)])]);
    expect(queries).toHaveLength(1);
  });

  it('starts, steps and finishes that come together leave in one query', async () => {
    const { repository, queries } = fakeRepository();
    const journal = new RunJournal(repository, { delayMs: 60_000 });
    await Promise.all([
      journal.start(start('b')),
      journal.write('a', [trace(6)]),
      // A finish does not wait for the delay: it takes the waiting rows along at the end of this tick.
      journal.finish(result('a')),
    ]);
    expect(queries).toEqual(['starts b | steps a:6 | finishes a']);
  });

  it('a failed query rejects every writer of the batch', async () => {
    const { repository } = fakeRepository({ fail: true });
    const journal = new RunJournal(repository, { delayMs: 5 });
    const results = await Promise.allSettled([
      journal.start(start('a')),
      journal.write('b', [trace(1)]),
      journal.finish(result('c')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
  });

  it('a finish whose run was never started is refused, the rest of its batch is written', async () => {
    const { repository } = fakeRepository({ notStarted: ['ghost'] });
    const journal = new RunJournal(repository, { delayMs: 5 });
    const [ghost, real, steps] = await Promise.allSettled([
      journal.finish(result('ghost')),
      journal.finish(result('real')),
      journal.write('real', [trace(1)]),
    ]);
    expect(ghost).toMatchObject({ status: 'rejected', reason: { code: 'run_not_found' } });
    expect(real.status).toBe('fulfilled');
    expect(steps.status).toBe('fulfilled');
  });

  it('a bad row fails only its own writer: a failed batch is written again writer by writer', async () => {
    const { repository, queries } = fakeRepository({ poison: 'bad' });
    const journal = new RunJournal(repository, { delayMs: 5 });
    const [bad, good, steps] = await Promise.allSettled([
      journal.start(start('bad')),
      journal.start(start('good')),
      journal.write('good', [trace(1)]),
    ]);
    expect(bad).toMatchObject({ status: 'rejected', reason: { message: /too long/ } });
    expect(good.status).toBe('fulfilled');
    expect(steps.status).toBe('fulfilled');
    expect(queries).toEqual(['starts bad,good | steps good:1', 'starts bad', 'starts good', 'steps good:1']);
  });

  it("tells onWrite each query's duration, a failed one's too", async () => {
    const durations: number[] = [];
    const { repository } = fakeRepository({ takesMs: 30 });
    const journal = new RunJournal(repository, { delayMs: 5, onWrite: (ms) => durations.push(ms) });
    await Promise.all([journal.start(start('a')), journal.write('a', [trace(1)])]);
    expect(durations).toHaveLength(1);
    expect(durations[0]).toBeGreaterThanOrEqual(25);
    expect(durations[0]).toBeLessThan(5_000);

    // A failed batch, then each of its two callers alone: three queries.
    const failing = fakeRepository({ poison: 'bad' });
    const timed: number[] = [];
    const other = new RunJournal(failing.repository, { delayMs: 5, onWrite: (ms) => timed.push(ms) });
    await Promise.allSettled([other.start(start('bad')), other.start(start('good'))]);
    expect(failing.queries).toHaveLength(3);
    expect(timed).toHaveLength(3);
  });
});
