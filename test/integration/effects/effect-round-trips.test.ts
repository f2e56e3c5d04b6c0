// The effect ledger's MySQL round trips on a pool that runs several statements in one query (the worker's):
// the capped claims of one turn leave in one query, each with its own verdict; the done records of effects
// claimed together leave in one write after the calls returned; caps hold across ledgers claiming at once; and a
// record that never lands (the process died first) is settled by the lookup, never sent again. Round trips
// are counted exactly, by wrapping the pool's query.
import { randomBytes } from 'node:crypto';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectsInFlight } from '../../../src/kernel/effects-in-flight.js';
import { runToolCall, type ToolRunOptions } from '../../../src/kernel/run-tool-call.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { httpDeliveryLookup } from '../../../src/tools/delivery-lookup.js';
import { EffectLedger, type EffectLedgerOptions } from '../../../src/effects/effect-ledger.js';
import { sweepUnsettledEffects, sweptToolsOf } from '../../../src/effects/effect-sweeper.js';
import { createSendEmailTool, type SendEmailToolOptions } from '../../../src/tools/send-email.js';
import { SmtpPool } from '../../../src/tools/smtp-pool.js';

const database = `af_test_effect_rt_${randomBytes(4).toString('hex')}`;
const url = `mysql://root@127.0.0.1:3306/${database}`;
/** The worker's ledger options (worker-services.ts). */
const WORKER: EffectLedgerOptions = { multipleStatements: true, deferDone: true };
const RUN_OPTIONS: ToolRunOptions = { defaultTimeoutMs: 15_000, transientRetries: 2, retryBaseDelayMs: 5 };

let plain: Pool;
let sink: SmtpSink;
const closers: (() => Promise<unknown> | void)[] = [];

beforeAll(async () => {
  plain = await createStorePool(url);
  await migrate(plain);
  sink = await startSmtpSink();
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await sink.close();
  await plain.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(database)}`);
  await plain.end();
});

/** A multi-statement pool whose every query (one round trip each) is counted. */
async function countedPool(): Promise<{ pool: Pool; queries: string[] }> {
  const real = await createStorePool(url, { multipleStatements: true, connectionLimit: 5 });
  closers.push(() => real.end());
  const queries: string[] = [];
  const counting = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(object, property) {
        const value: unknown = Reflect.get(object, property);
        if (typeof value !== 'function') return value;
        if (property === 'query' || property === 'execute') {
          return (sql: unknown, ...rest: unknown[]) => {
            queries.push(typeof sql === 'string' ? sql : JSON.stringify(sql));
            return (value as (...args: unknown[]) => unknown).call(object, sql, ...rest);
          };
        }
        if (property === 'getConnection') {
          return async () => counting(await (value as () => Promise<object>).call(object));
        }
        return (value as (...args: unknown[]) => unknown).bind(object);
      },
    });
  return { pool: counting(real), queries };
}

const newJob = () => `job-${randomBytes(4).toString('hex')}`;

async function rowsOf(jobId: string): Promise<RowDataPacket[]> {
  const [rows] = await plain.query<RowDataPacket[]>(
    'SELECT * FROM effect_ledger WHERE job_id = ? ORDER BY effect_key',
    [jobId],
  );
  return rows;
}

function emailTool(ledger: EffectLedger, overrides: Partial<SendEmailToolOptions> = {}) {
  const smtp = new SmtpPool(sink.url, { maxConnections: 5 });
  closers.push(() => smtp.close());
  return createSendEmailTool({
    ledger,
    transport: smtp,
    from: 'reports@agent-fleet.local',
    allowedDomains: ['example.com'],
    maxPerRun: 10,
    ...overrides,
  });
}

/** The calls of one model reply, as the kernel runs them: started in the same turn, awaited together. */
function reply(tool: ReturnType<typeof emailTool>, jobId: string, step: number, to: readonly string[]) {
  const registry = new ToolRegistry([tool]);
  return Promise.all(
    to.map((name, i) =>
      runToolCall(
        registry,
        {
          name: 'send_email',
          args: { ok: true, value: { to: `${name}@example.com`, subject: 'Orders', body: `Dear ${name}` } },
        },
        { signal: new AbortController().signal, runId: jobId, callKey: `${jobId}:${step}:${i + 1}`, step },
        RUN_OPTIONS,
      ),
    ),
  );
}

const deliveredTo = (name: string) => sink.messages.filter((m) => m.to.includes(`${name}@example.com`));

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('round trips of a reply with three parallel emails', () => {
  it('claims them in one query and records them in one more: at most one round trip per email', async () => {
    const { pool, queries } = await countedPool();
    const tool = emailTool(new EffectLedger(pool, WORKER));
    const jobId = newJob();
    const outcomes = await reply(tool, jobId, 1, ['ann', 'ben', 'cat']);
    expect(outcomes.map((o) => o.ok)).toEqual([true, true, true]);
    // The calls returned; their records are in flight with the effects, and land together.
    expect(await effectsInFlight.settled(5_000)).toBe(true);
    expect((await rowsOf(jobId)).map((row) => row['status'])).toEqual(['done', 'done', 'done']);
    expect(queries).toHaveLength(2);
    expect(queries.length / 3).toBeLessThanOrEqual(1);
    expect(['ann', 'ben', 'cat'].map((name) => deliveredTo(name).length)).toEqual([1, 1, 1]);

    // The reply asked again (a retry of the step): nothing sent twice, one round trip for the three.
    queries.length = 0;
    const again = await reply(tool, jobId, 1, ['ann', 'ben', 'cat']);
    expect(again.map((o) => o.output)).toEqual(outcomes.map((o) => o.output));
    expect(queries).toHaveLength(1);
    expect(['ann', 'ben', 'cat'].map((name) => deliveredTo(name).length)).toEqual([1, 1, 1]);
  });

  it('holds EMAIL_MAX_PER_RUN with parallel calls claimed together', async () => {
    const { pool } = await countedPool();
    const tool = emailTool(new EffectLedger(pool, WORKER), { maxPerRun: 2 });
    const jobId = newJob();
    const outcomes = await reply(tool, jobId, 1, ['dan', 'eve', 'fay', 'gus']);
    // The first ones in the reply's order are the ones sent.
    expect(outcomes.map((o) => o.ok)).toEqual([true, true, false, false]);
    expect(outcomes[2]?.errorCode).toBe('email_cap_reached');
    expect(await effectsInFlight.settled(5_000)).toBe(true);
    expect(await rowsOf(jobId)).toHaveLength(2);
    expect(['dan', 'eve', 'fay', 'gus'].map((name) => deliveredTo(name).length)).toEqual([1, 1, 0, 0]);
  });
});

describe('claims made in the same turn', () => {
  it('go in one query, and each gets its own verdict', async () => {
    const { pool, queries } = await countedPool();
    const ledger = new EffectLedger(pool, WORKER);
    const job = newJob();
    await plain.query(
      `INSERT INTO effect_ledger (effect_key, job_id, tool, status, result, started_at) VALUES
       (?, ?, 'capped', 'done', '"made"', NOW(3)), (?, ?, 'capped', 'pending', NULL, NOW(3))`,
      [`${job}:1:0`, job, `${job}:1:1`, job],
    );
    const claim = (n: number) =>
      ledger.claim({ effectKey: `${job}:1:${n}`, jobId: job, tool: 'capped', maxPerJob: 4, started: true });
    // Two rows count against the cap of 4: two new ones fit, the third does not; the same key twice in one
    // turn is claimed once (the other meets it pending, as two calls at once always did).
    const verdicts = await Promise.all([claim(0), claim(1), claim(2), claim(3), claim(4), claim(2)]);
    expect(queries).toHaveLength(1);
    expect(verdicts[0]).toMatchObject({ kind: 'done', row: { result: 'made' } });
    expect(verdicts[1]).toMatchObject({ kind: 'pending', row: { status: 'pending' } });
    expect(verdicts[2]).toEqual({ kind: 'new', attempt: 1 });
    expect(verdicts[3]).toEqual({ kind: 'new', attempt: 1 });
    expect(verdicts[4]).toEqual({ kind: 'cap_reached', count: 4 });
    expect(verdicts[5]).toMatchObject({ kind: 'pending', row: { effectKey: `${job}:1:2` } });
    const rows = await rowsOf(job);
    expect(rows.map((row) => [row['effect_key'], row['status']])).toEqual([
      [`${job}:1:0`, 'done'],
      [`${job}:1:1`, 'pending'],
      [`${job}:1:2`, 'pending'],
      [`${job}:1:3`, 'pending'],
    ]);
    expect(rows[2]?.['started_at']).toBeInstanceOf(Date);

    // A failed row is claimed again (alone, under the lock), and the lock is free afterwards.
    await ledger.markFailed(`${job}:1:3`, 'not done: it certainly did not happen');
    expect(await Promise.all([claim(3), claim(5)])).toEqual([
      { kind: 'new', attempt: 2 },
      { kind: 'cap_reached', count: 4 },
    ]);
    const started = Date.now();
    const other = new EffectLedger(plain, { lockTimeoutSeconds: 1 });
    expect(await other.claim({ effectKey: `${job}:2:0`, jobId: job, tool: 'capped', maxPerJob: 9 })).toEqual({
      kind: 'new',
      attempt: 1,
    });
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('hold a cap across ledgers claiming many at once', async () => {
    const ledgers = await Promise.all(
      [0, 1, 2].map(async () => new EffectLedger((await countedPool()).pool, WORKER)),
    );
    const job = newJob();
    const verdicts = await Promise.all(
      ledgers.flatMap((ledger, l) =>
        [0, 1, 2, 3, 4, 5].map((n) =>
          ledger.claim({ effectKey: `${job}:${l}:${n}`, jobId: job, tool: 'capped', maxPerJob: 5 }),
        ),
      ),
    );
    expect(verdicts.filter((v) => v.kind === 'new')).toHaveLength(5);
    expect(verdicts.filter((v) => v.kind === 'cap_reached')).toHaveLength(13);
    expect(await rowsOf(job)).toHaveLength(5);
  });
});

describe('a done record that never lands', () => {
  it('leaves the row pending and handed off: the resumed call and the sweeper settle it by lookup, nothing is sent twice', async () => {
    // The first process: its records wait for the whole reply, and the second email's 250 is held, so the
    // first email's record is still waiting when the process "dies" (its ledger's pool goes away).
    let arrivals = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const holding = await startSmtpSink({
      holdReply: (stage) => (stage === 'data' && ++arrivals === 2 ? held : undefined),
    });
    closers.push(() => holding.close());
    const lookup = httpDeliveryLookup(holding.lookupUrl);
    const doomedPool = await createStorePool(url, { multipleStatements: true });
    const doomedSmtp = new SmtpPool(holding.url, { maxConnections: 5 });
    const options = {
      from: 'reports@agent-fleet.local',
      allowedDomains: ['example.com'],
      maxPerRun: 10,
      deliveryLookup: lookup,
      pendingGraceMs: 1_000,
      pendingPollMs: 100,
    };
    const doomed = createSendEmailTool({
      ...options,
      ledger: new EffectLedger(doomedPool, { ...WORKER, doneDelayMs: 60_000 }),
      transport: doomedSmtp,
    });
    const jobId = newJob();
    const registry = new ToolRegistry([doomed]);
    const run = (i: number, name: string) =>
      runToolCall(
        registry,
        {
          name: 'send_email',
          args: { ok: true, value: { to: `${name}@example.com`, subject: 'Orders', body: 'Dear you' } },
        },
        { signal: new AbortController().signal, runId: jobId, callKey: `${jobId}:1:${i}`, step: 1 },
        RUN_OPTIONS,
      );
    const first = [run(1, 'hal'), run(2, 'ida')];
    const done = await Promise.race(first.map((p, i) => p.then(() => i)));
    await until(() => holding.messages.length === 2, 'both messages at the sink');
    const at = (name: string) => holding.messages.filter((m) => m.to.includes(`${name}@example.com`));
    // One call returned "sent"; its record waits for the other, whose 250 is held.
    expect((await first[done]!).output).toMatch(/^Sent to/);
    const sentKey = `${jobId}:1:${done + 1}`;
    const [row] = (await rowsOf(jobId)).filter((r) => r['effect_key'] === sentKey);
    expect(row).toMatchObject({ status: 'pending' });
    expect(row?.['started_at']).toBeInstanceOf(Date);
    // The process dies: nothing it still meant to write lands.
    await doomedPool.end();

    // The resumed job (its checkpoint missed the result) makes the call again: the lookup finds the message.
    const { pool } = await countedPool();
    const rescuerSmtp = new SmtpPool(holding.url, { maxConnections: 5 });
    closers.push(() => rescuerSmtp.close());
    const rescuer = createSendEmailTool({
      ...options,
      ledger: new EffectLedger(pool, WORKER),
      transport: rescuerSmtp,
    });
    const resumed = await runToolCall(
      new ToolRegistry([rescuer]),
      {
        name: 'send_email',
        args: {
          ok: true,
          value: { to: `${done === 0 ? 'hal' : 'ida'}@example.com`, subject: 'Orders', body: 'Dear you' },
        },
      },
      { signal: new AbortController().signal, runId: jobId, callKey: sentKey, step: 1 },
      RUN_OPTIONS,
    );
    expect(resumed.output).toMatch(/^Sent to/);
    expect((await rowsOf(jobId)).find((r) => r['effect_key'] === sentKey)).toMatchObject({ status: 'done' });

    // The other row (its call never resumed) is the sweeper's: it finds the message and records it sent.
    release();
    await Promise.allSettled(first);
    doomedSmtp.close();
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const counts = await sweepUnsettledEffects({
      ledger: new EffectLedger(pool, WORKER),
      tools: sweptToolsOf([rescuer]),
      logger: { info: () => undefined, warn: () => undefined },
    });
    expect(counts).toEqual({ done: 1, not_done: 0, uncertain: 0 });
    expect((await rowsOf(jobId)).map((r) => r['status'])).toEqual(['done', 'done']);
    expect([at('hal').length, at('ida').length]).toEqual([1, 1]);
  }, 30_000);
});
