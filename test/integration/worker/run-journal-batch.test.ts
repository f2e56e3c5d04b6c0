// Red-team of the shared run journal (src/worker/run-journal.ts) over a real RunsRepository on MariaDB: several
// jobs' rows leave in one multi-statement query; one job's bad row must not fail or lose the others', must not
// count another job's start twice, and must itself land in some form (or its attempt fail visibly).
import mysql, { type Pool, type RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentResult, StepTrace } from '../../../src/kernel/types.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { RunsRepository, type StartRunInput } from '../../../src/store/runs-repository.js';
import { RunJournal } from '../../../src/worker/run-journal.js';
import { createNamespace, type FleetNamespace } from '../../support/fleet-harness.js';

let ns: FleetNamespace;
let pool: Pool;
let repository: RunsRepository;

beforeAll(async () => {
  ns = createNamespace('journal');
  pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 3, multipleStatements: true });
  await migrate(pool);
  repository = new RunsRepository(pool);
});

afterAll(async () => {
  await pool.end();
  await ns.cleanup();
});

let n = 0;
const id = (label: string) => `${label}-${++n}`;

const trace = (step: number, over: Partial<StepTrace> = {}): StepTrace =>
  ({
    runId: 'x',
    step,
    kind: 'action',
    actions: [],
    observations: [`observation ${step}`],
    promptTokens: 10,
    completionTokens: 5,
    costUsd: 0.001,
    latencyMs: 1,
    modelLatencyMs: 1,
    modelCalls: 1,
    error: null,
    ...over,
  }) as unknown as StepTrace;

const start = (jobId: string): StartRunInput => ({
  jobId,
  task: 'a task',
  model: 'gpt-4.1-mini',
  protocol: 'json',
  attempt: 1,
});

const result = (jobId: string, usage: Partial<AgentResult['usage']> = {}): AgentResult => ({
  jobId,
  status: 'succeeded',
  stopReason: 'answer',
  answer: 'done',
  steps: 1,
  toolCalls: 0,
  usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15, costUsd: 0.001, ...usage },
  error: null,
});

const settle = (p: Promise<unknown>) =>
  p.then(
    () => 'written',
    (e: unknown) => `failed: ${(e as Error).message}`,
  );

describe('one bad row in a shared batch', () => {
  it('a step with a token count past INT neither fails the others nor counts their starts twice, and lands itself', async () => {
    const journal = new RunJournal(repository, { delayMs: 20 });
    const [a, b, c] = [id('a'), id('b'), id('c')];
    const answers = await Promise.all([
      settle(journal.start(start(c))),
      settle(journal.write(a, [trace(1)])),
      // An endpoint may report any count up to 2^53 (openai-chat-model.ts clamps to MAX_SAFE_INTEGER only).
      settle(journal.write(b, [trace(1), trace(2, { promptTokens: 3_000_000_000 })])),
      settle(journal.write(a, [trace(2)])),
    ]);
    expect(answers).toEqual(['written', 'written', 'written', 'written']);
    expect((await repository.getSteps(a)).map((s) => s.step)).toEqual([1, 2]);
    // Written once: the failed batch had committed the starts statement before the steps statement failed.
    expect(await repository.getRun(c)).toMatchObject({ status: 'running', attempts: 1 });
    expect((await repository.getSteps(b)).map((s) => s.step)).toEqual([1, 2]);
  });

  it('a finish whose usage is past its columns lands (else no result is ever published)', async () => {
    const journal = new RunJournal(repository, { delayMs: 20 });
    const [a, b] = [id('a'), id('b')];
    await Promise.all([journal.start(start(a)), journal.start(start(b))]);
    const answers = await Promise.all([
      settle(journal.finish(result(a))),
      settle(
        journal.finish(
          result(b, { promptTokens: 3_000_000_000, totalTokens: 3_000_000_005, costUsd: 7_500_000 }),
        ),
      ),
    ]);
    expect(answers).toEqual(['written', 'written']);
    expect(await repository.getRun(a)).toMatchObject({ status: 'succeeded' });
    expect(await repository.getRun(b)).toMatchObject({ status: 'succeeded' });
  });

  it('a NaN or Infinity cost lands as a number', async () => {
    const journal = new RunJournal(repository, { delayMs: 20 });
    const [a, b] = [id('a'), id('b')];
    await journal.start(start(b));
    const answers = await Promise.all([
      settle(journal.write(a, [trace(1, { costUsd: Number.NaN }), trace(2, { costUsd: Infinity })])),
      settle(journal.finish(result(b, { costUsd: Number.NaN }))),
    ]);
    expect(answers).toEqual(['written', 'written']);
    expect((await repository.getSteps(a)).map((s) => s.step)).toEqual([1, 2]);
    expect(await repository.getRun(b)).toMatchObject({ status: 'succeeded' });
  });

  it("a lone surrogate in a model's text lands, in text and JSON columns alike, as U+FFFD", async () => {
    const journal = new RunJournal(repository, { delayMs: 20 });
    const [a, b] = [id('a'), id('b')];
    await journal.start(start(b));
    const lone = 'bad \ud800 text';
    const answers = await Promise.all([
      settle(
        journal.write(a, [
          trace(1, {
            observations: [lone],
            actions: [{ id: 'c1', tool: 'search', args: { q: lone, [lone]: 1 } }] as never,
            error: lone,
          }),
        ]),
      ),
      settle(
        journal.finish({ ...result(b), answer: lone, output: { x: lone, y: '\\ud800', z: '\\\ud800' } }),
      ),
    ]);
    expect(answers).toEqual(['written', 'written']);
    const [step] = await repository.getSteps(a);
    expect(step?.observation).toBe('bad \ufffd text');
    expect(step?.actions[0]?.args).toEqual({ q: 'bad \ufffd text', ['bad \ufffd text']: 1 });
    // A backslash and the text "ud800" is no escape: kept as it is; a backslash and a lone surrogate is one.
    expect(await repository.getRun(b)).toMatchObject({
      answer: 'bad \ufffd text',
      output: { x: 'bad \ufffd text', y: '\\ud800', z: '\\\ufffd' },
    });
  });

  it('a statement failing midway (steps of an id too long for job_id) leaves no start written twice', async () => {
    const journal = new RunJournal(repository, { delayMs: 20 });
    const [a, c] = [id('a'), id('c')];
    // A job added through BullMQ directly may carry any id; agent_runs.job_id holds 64 characters.
    const long = 'x'.repeat(70);
    const answers = await Promise.all([
      settle(journal.start(start(c))),
      settle(journal.write(a, [trace(1)])),
      settle(journal.write(long, [trace(1)])),
    ]);
    expect(answers.slice(0, 2)).toEqual(['written', 'written']);
    expect(answers[2]).toMatch(/Data too long for column 'job_id'/);
    // The start of c went in once: its attempt is counted once.
    expect(await repository.getRun(c)).toMatchObject({ attempts: 1 });
    expect((await repository.getSteps(a)).map((s) => s.step)).toEqual([1]);
  });
});

describe('a backlog past max_allowed_packet', () => {
  it("one job's 18 MB of traces (a resumed run's parked steps, an outage's backlog) land", async () => {
    const journal = new RunJournal(repository, { delayMs: 20 });
    const a = id('a');
    const big = 'y'.repeat(450_000);
    const traces = Array.from({ length: 40 }, (_, i) =>
      trace(i + 1, { actions: [{ id: 'c', tool: 't', args: { big } }] as never }),
    );
    // MariaDB's max_allowed_packet is 16 MB by default: in one query, the write failed the same way every time.
    expect(await settle(journal.write(a, traces))).toBe('written');
    const [[count]] = await pool.query<RowDataPacket[]>(
      'SELECT COUNT(*) AS n FROM agent_steps WHERE job_id = ?',
      [a],
    );
    expect(count?.n).toBe(40);
  });
});

describe('a batch whose connection dies in flight', () => {
  it('rolls back whole: every caller is written once by the rewrite, starts counted once, no duplicate steps', async () => {
    const journal = new RunJournal(repository, { delayMs: 20 });
    const [a, c, x] = [id('a'), id('c'), id('x')];
    await journal.start(start(x));
    // Another session holds x's row: the batch's finish of x waits on it, the batch's start and steps before it done.
    const holder = await mysql.createConnection(ns.mysqlUrl);
    try {
      await holder.query('START TRANSACTION');
      await holder.query('SELECT * FROM agent_runs WHERE job_id = ? FOR UPDATE', [x]);
      const answers = Promise.all([
        settle(journal.start(start(c))),
        settle(journal.write(a, [trace(1), trace(2)])),
        settle(journal.finish(result(x))),
      ]);
      const victim = await waitForQuery(holder, 'UPDATE agent_runs');
      await holder.query(`KILL CONNECTION ${victim}`); // the worker dying, the server restarting
      await holder.query('COMMIT');
      expect(await answers).toEqual(['written', 'written', 'written']);
    } finally {
      await holder.end();
    }
    expect(await repository.getRun(c)).toMatchObject({ status: 'running', attempts: 1 });
    expect(await repository.getRun(x)).toMatchObject({ status: 'succeeded', attempts: 1 });
    const [[count]] = await pool.query<RowDataPacket[]>(
      'SELECT COUNT(*) AS n FROM agent_steps WHERE job_id = ?',
      [a],
    );
    expect(count?.n).toBe(2);
  });
});

/** The id of the session running a statement that starts with `prefix`, once it runs. */
async function waitForQuery(connection: mysql.Connection, prefix: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const [rows] = await connection.query<RowDataPacket[]>(
      'SELECT id, info FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID()',
    );
    const running = rows.find((row) => String(row.info ?? '').includes(prefix));
    if (running) return Number(running.id);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no session ran ${prefix}`);
}
