// Attacks on the claims of one turn sent in one multi-statement query (effect-ledger.ts): one claim whose
// statement fails midway must not leave the others' rows claimed (and handed off) for effects nobody will make,
// nor keep the job's lock; two ledgers claiming the same keys at once give each key one `new`; failed rows taken
// again count against the cap; hostile values stay values.
import { randomBytes } from 'node:crypto';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectsInFlight } from '../../../src/kernel/effects-in-flight.js';
import { runToolCall, type ToolRunOptions } from '../../../src/kernel/run-tool-call.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { EffectLedger, type EffectLedgerOptions } from '../../../src/effects/effect-ledger.js';
import { createSendEmailTool } from '../../../src/tools/send-email.js';
import { SmtpPool } from '../../../src/tools/smtp-pool.js';

const database = `af_test_effect_atk_${randomBytes(4).toString('hex')}`;
const url = `mysql://root@127.0.0.1:3306/${database}`;
const WORKER: EffectLedgerOptions = { multipleStatements: true, deferDone: true };
const RUN_OPTIONS: ToolRunOptions = { defaultTimeoutMs: 15_000, transientRetries: 0, retryBaseDelayMs: 5 };

let plain: Pool;
let multi: Pool;
let sink: SmtpSink;
const closers: (() => Promise<unknown> | void)[] = [];

beforeAll(async () => {
  plain = await createStorePool(url);
  await migrate(plain);
  multi = await createStorePool(url, { multipleStatements: true, connectionLimit: 2 });
  sink = await startSmtpSink();
  // A claim whose key says so fails in the middle of its query, as a deadlock, a lock wait timeout or a
  // duplicate key would.
  // A done record of a key that says so is refused, as a lock wait timeout on its row would refuse it.
  await plain.query(
    `CREATE TRIGGER refuse_record BEFORE UPDATE ON effect_ledger FOR EACH ROW
     IF NEW.effect_key LIKE '%norecord%' AND NEW.status = 'done' THEN
       SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record refused'; END IF`,
  );
  await plain.query(
    `CREATE TRIGGER poison_insert BEFORE INSERT ON effect_ledger FOR EACH ROW
     IF NEW.effect_key LIKE '%poison%' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poisoned'; END IF`,
  );
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await sink.close();
  await multi.end();
  await plain.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(database)}`);
  await plain.end();
});

const newJob = () => `job-${randomBytes(4).toString('hex')}`;

async function rowsOf(jobId: string): Promise<RowDataPacket[]> {
  const [rows] = await plain.query<RowDataPacket[]>(
    'SELECT * FROM effect_ledger WHERE job_id = ? ORDER BY effect_key',
    [jobId],
  );
  return rows;
}

/** The job's lock is free: another session takes it at once. */
async function lockIsFree(jobId: string, tool: string): Promise<boolean> {
  const connection = await plain.getConnection();
  try {
    const name = "CONCAT('af_effect:', LEFT(SHA2(CONCAT(DATABASE(), '/', ?, '/', ?), 256), 48))";
    const [rows] = await connection.query<RowDataPacket[]>(`SELECT GET_LOCK(${name}, 0) AS got`, [
      jobId,
      tool,
    ]);
    await connection.query(`SELECT RELEASE_LOCK(${name})`, [jobId, tool]);
    return Number(rows[0]?.['got']) === 1;
  } finally {
    connection.release();
  }
}

/** send_email on the worker's ledger with no delivery lookup, for a new job: `call(callKey, name)` runs one call. */
function emailCalls() {
  const smtp = new SmtpPool(sink.url, { maxConnections: 5 });
  closers.push(() => smtp.close());
  const tool = createSendEmailTool({
    ledger: new EffectLedger(multi, WORKER),
    transport: smtp,
    from: 'reports@agent-fleet.local',
    allowedDomains: ['example.com'],
    maxPerRun: 10,
    pendingGraceMs: 200,
    pendingPollMs: 50,
  });
  const registry = new ToolRegistry([tool]);
  const job = newJob();
  const call = (callKey: string, name: string) =>
    runToolCall(
      registry,
      {
        name: 'send_email',
        args: { ok: true, value: { to: `${name}@example.com`, subject: 'Orders', body: 'Dear you' } },
      },
      { signal: new AbortController().signal, runId: job, callKey, step: 1 },
      RUN_OPTIONS,
    );
  return { job, call };
}

describe('a claim of the turn whose statement fails midway', () => {
  it('leaves no other claim of the query half made, frees the lock, and the others still get their verdict', async () => {
    const ledger = new EffectLedger(multi, WORKER);
    const job = newJob();
    const claim = (key: string) =>
      ledger.claim({ effectKey: `${job}:1:${key}`, jobId: job, tool: 'capped', maxPerJob: 5, started: true });
    const verdicts = await Promise.allSettled([claim('1'), claim('poison'), claim('3')]);
    // The poisoned claim fails; the others are not made to pay for it.
    expect(verdicts[1]?.status).toBe('rejected');
    expect(verdicts[0]).toEqual({ status: 'fulfilled', value: { kind: 'new', attempt: 1 } });
    expect(verdicts[2]).toEqual({ status: 'fulfilled', value: { kind: 'new', attempt: 1 } });
    // Exactly the rows of the claims that were told `new`: none claimed for an effect nobody makes.
    expect((await rowsOf(job)).map((row) => row['effect_key'])).toEqual([`${job}:1:1`, `${job}:1:3`]);
    expect(await lockIsFree(job, 'capped')).toBe(true);
  });

  it('does not leave an email of the reply handed off, then uncertain, when it was never sent', async () => {
    // No delivery lookup: a row left pending and handed off could only end uncertain, the email never sent.
    const { job, call } = emailCalls();
    // The same reply: one call's claim fails in the query that carries the other's.
    const outcomes = await Promise.all([call(`${job}:1:1`, 'jon'), call(`${job}:1:poison`, 'kim')]);
    expect(outcomes[1]?.ok).toBe(false);
    // A retry of the first call (as the runner or a resumed job would make it) must send it, once.
    const again = outcomes[0]?.ok ? outcomes[0] : await call(`${job}:1:1`, 'jon');
    expect(again.output).toMatch(/^Sent to/);
    expect(sink.messages.filter((m) => m.to.includes('jon@example.com'))).toHaveLength(1);
  });
});

describe('a claims query whose connection is killed while it waits for the lock', () => {
  it('claims each again, once, and leaves the lock free', async () => {
    const ledger = new EffectLedger(multi, WORKER);
    const job = newJob();
    const holder = await plain.getConnection();
    const name = "CONCAT('af_effect:', LEFT(SHA2(CONCAT(DATABASE(), '/', ?, '/', ?), 256), 48))";
    await holder.query(`SELECT GET_LOCK(${name}, 0)`, [job, 'capped']);
    const claim = (n: number) =>
      ledger.claim({ effectKey: `${job}:1:${n}`, jobId: job, tool: 'capped', maxPerJob: 5, started: true });
    const verdicts = Promise.all([claim(1), claim(2)]);
    let victim: number | undefined;
    for (let i = 0; i < 100 && victim === undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const [rows] = await plain.query<RowDataPacket[]>(
        "SELECT id FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE '%GET_LOCK%' AND INFO LIKE ?",
        [`%${job}%`],
      );
      victim = rows[0]?.['id'] as number | undefined;
    }
    expect(victim).toBeDefined();
    await plain.query(`KILL CONNECTION ${Number(victim)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await holder.query(`SELECT RELEASE_LOCK(${name})`, [job, 'capped']);
    holder.release();
    expect(await verdicts).toEqual([
      { kind: 'new', attempt: 1 },
      { kind: 'new', attempt: 1 },
    ]);
    expect(await rowsOf(job)).toHaveLength(2);
    expect(await lockIsFree(job, 'capped')).toBe(true);
  });
});

describe('a deferred done record that fails', () => {
  it('does not take the records of the emails claimed with it down too; none is ever sent again', async () => {
    // No delivery lookup: a row whose record never landed can only end uncertain.
    const { job, call } = emailCalls();
    const first = await Promise.all([call(`${job}:1:1`, 'lea'), call(`${job}:1:norecord`, 'max')]);
    expect(first.map((o) => o.output)).toEqual([
      expect.stringMatching(/^Sent to/),
      expect.stringMatching(/^Sent to/),
    ]);
    expect(await effectsInFlight.settled(5_000)).toBe(true);
    // The one record that could be written was.
    expect((await rowsOf(job)).map((row) => [row['effect_key'], row['status']])).toEqual([
      [`${job}:1:1`, 'done'],
      [`${job}:1:norecord`, 'pending'],
    ]);
    // Asked again (a resumed job whose checkpoint missed both results): nothing is sent twice.
    await new Promise((resolve) => setTimeout(resolve, 250));
    const again = await Promise.all([call(`${job}:1:1`, 'lea'), call(`${job}:1:norecord`, 'max')]);
    expect(again[0]?.output).toMatch(/^Sent to/);
    expect(again[1]?.output).toMatch(/^Delivery uncertain/);
    expect(sink.messages.filter((m) => m.to.includes('lea@example.com'))).toHaveLength(1);
    expect(sink.messages.filter((m) => m.to.includes('max@example.com'))).toHaveLength(1);
  });
});

describe('two ledgers claiming the same keys of a job at once', () => {
  it('give each key one `new` and hold the cap', async () => {
    const pools = await Promise.all(
      [0, 1].map(() => createStorePool(url, { multipleStatements: true, connectionLimit: 3 })),
    );
    closers.push(...pools.map((pool) => () => pool.end()));
    // Several jobs at once as well: their claims' transactions run side by side (no deadlock, no lost claim).
    for (let round = 0; round < 10; round++) {
      const jobs = [newJob(), newJob(), newJob(), newJob()];
      const ledgers = pools.map((pool) => new EffectLedger(pool, WORKER));
      const verdicts = await Promise.all(
        jobs.map((job) =>
          Promise.all(
            ledgers.flatMap((ledger) =>
              [1, 2, 3, 4, 2].map((n) =>
                ledger.claim({
                  effectKey: `${job}:1:${n}`,
                  jobId: job,
                  tool: 'capped',
                  maxPerJob: 3,
                  started: true,
                }),
              ),
            ),
          ),
        ),
      );
      for (const [i, job] of jobs.entries()) {
        expect(verdicts[i]!.filter((v) => v.kind === 'new')).toHaveLength(3);
        const rows = await rowsOf(job);
        expect(rows).toHaveLength(3);
        expect(rows.every((row) => row['attempt'] === 1)).toBe(true);
      }
    }
  });
});

describe('failed rows claimed again', () => {
  it('count against the cap as they are taken', async () => {
    const ledger = new EffectLedger(multi, WORKER);
    const job = newJob();
    await plain.query(
      `INSERT INTO effect_ledger (effect_key, job_id, tool, status, attempt) VALUES
       (?, ?, 'capped', 'failed', 1), (?, ?, 'capped', 'failed', 2), (?, ?, 'capped', 'done', 1)`,
      [`${job}:1:1`, job, `${job}:1:2`, job, `${job}:1:0`, job],
    );
    const claim = (n: number) =>
      ledger.claim({ effectKey: `${job}:1:${n}`, jobId: job, tool: 'capped', maxPerJob: 2 });
    expect(await Promise.all([claim(2), claim(1), claim(3)])).toEqual([
      { kind: 'new', attempt: 3 },
      { kind: 'cap_reached', count: 2 },
      { kind: 'cap_reached', count: 2 },
    ]);
  });
});

describe('hostile values in the claims of one query', () => {
  it('stay values: quotes, backslashes and statement breaks are stored as given', async () => {
    const ledger = new EffectLedger(multi, WORKER);
    const job = newJob();
    const evil = "x\\'; DELETE FROM effect_ledger; SELECT RELEASE_LOCK('a'); -- \u0000 \u2028 ''";
    const verdicts = await Promise.all(
      [1, 2, 3].map((n) =>
        ledger.claim({
          effectKey: `${job}:1:${n}${evil}`.slice(0, 191),
          jobId: job,
          tool: 'capped',
          maxPerJob: 5,
          ref: evil,
          detail: {
            subject: evil.repeat(50),
            to: Array.from({ length: 100 }, (_, i) => `r${i}@example.com`),
          },
        }),
      ),
    );
    expect(verdicts.map((v) => v.kind)).toEqual(['new', 'new', 'new']);
    const rows = await rowsOf(job);
    expect(rows).toHaveLength(3);
    expect(rows.map((row) => row['ref'])).toEqual([evil, evil, evil]);
    expect((JSON.parse(String(rows[0]?.['detail'])) as { subject: string }).subject).toBe(evil.repeat(50));
  });
});

describe('a reply asking for very many capped effects at once', () => {
  it('takes exactly the cap, in the reply order', async () => {
    const ledger = new EffectLedger(multi, WORKER);
    const job = newJob();
    const verdicts = await Promise.all(
      Array.from({ length: 300 }, (_, n) =>
        ledger.claim({
          effectKey: `${job}:1:${n}`,
          jobId: job,
          tool: 'capped',
          maxPerJob: 10,
          started: true,
        }),
      ),
    );
    expect(verdicts.slice(0, 10).every((v) => v.kind === 'new')).toBe(true);
    expect(verdicts.slice(10).every((v) => v.kind === 'cap_reached')).toBe(true);
    expect(await rowsOf(job)).toHaveLength(10);
  });
});
