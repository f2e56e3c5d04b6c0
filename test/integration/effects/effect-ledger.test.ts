// The ledger behind ctx.once on MariaDB: a recorded effect returns its value instead of running again, a
// throwing effect frees its key, a pending one (an attempt that stopped before recording) is never run again
// unless the tool's lookup settles it; per-job caps; the sweeper settles any tool's pending effects with its
// lookup; migration 011 moves send_email's old email_ledger rows into effect_ledger.
import { randomBytes } from 'node:crypto';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../../src/store/migrate.js';
import { loadMigrations } from '../../../src/store/migration-files.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { EffectLedger, effectKeyOf } from '../../../src/effects/effect-ledger.js';
import { EffectUncertainError, runOnce, type OnceCall } from '../../../src/effects/effect-once.js';
import { sweepUnsettledEffects, sweptToolsOf } from '../../../src/effects/effect-sweeper.js';
import { SentEmails } from '../../../src/tools/sent-emails.js';
import { LookupBackoff } from '../../../src/effects/lookup-backoff.js';
import {
  defineTool,
  type EffectHooks,
  type EffectSweepOutcome,
  type OnceOptions,
} from '../../../src/kernel/tool.js';
import { z } from 'zod';

const database = `af_test_effects_${randomBytes(4).toString('hex')}`;
let pool: Pool;
let ledger: EffectLedger;

beforeAll(async () => {
  pool = await createStorePool(`mysql://root@127.0.0.1:3306/${database}`);
  await migrate(pool);
  ledger = new EffectLedger(pool);
});

afterAll(async () => {
  await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(database)}`);
  await pool.end();
});

const call = (callKey: string, tool = 'notify'): OnceCall => ({
  callKey,
  jobId: callKey.split(':')[0] ?? callKey,
  tool,
  signal: new AbortController().signal,
});

const once = <T>(
  callKey: string,
  effect: () => Promise<T>,
  options: OnceOptions = {},
  hooks: EffectHooks = {},
  tool = 'notify',
) => runOnce(ledger, call(callKey, tool), effect, options, hooks);

async function statusOf(effectKey: string): Promise<RowDataPacket | undefined> {
  const [rows] = await pool.query<RowDataPacket[]>('SELECT * FROM effect_ledger WHERE effect_key = ?', [
    effectKey,
  ]);
  return rows[0];
}

/** A row an attempt claimed and started `ageSeconds` ago, then died before recording. */
async function leftPending(effectKey: string, tool: string, ageSeconds: number, started = true) {
  await pool.query(
    `INSERT INTO effect_ledger (effect_key, job_id, tool, status, ref, started_at, updated_at)
     VALUES (?, ?, ?, 'pending', ?, IF(?, NOW(3), NULL), NOW(3) - INTERVAL ? SECOND)`,
    [effectKey, effectKey.split(':')[0], tool, `ref-${effectKey}`, started, ageSeconds],
  );
}

describe('ctx.once on the effect ledger', () => {
  it('runs an effect once and gives its recorded value to every later call', async () => {
    let runs = 0;
    const effect = async () => ({ ticket: ++runs });
    expect(await once('job-1:1:0', effect)).toEqual({ ticket: 1 });
    expect(await once('job-1:1:0', effect)).toEqual({ ticket: 1 });
    // Another key of the same call is another effect (the old string form and the options form).
    expect(await once('job-1:1:0', effect, { key: 'second' })).toEqual({ ticket: 2 });
    expect(runs).toBe(2);
    expect(await statusOf('job-1:1:0')).toMatchObject({ status: 'done', attempt: 1 });
  });

  it('a late failure of a taken-over attempt never frees an effect another attempt made', async () => {
    let runs = 0;
    await once('job-late:1:0', async () => ++runs);
    expect(await statusOf('job-late:1:0')).toMatchObject({ status: 'done' });
    // The first attempt's send failed long after the takeover made the effect: it must not undo the record.
    await ledger.markFailed('job-late:1:0', 'SMTP 451 try again later');
    expect(await statusOf('job-late:1:0')).toMatchObject({ status: 'done' });
    expect(await once('job-late:1:0', async () => ++runs)).toBe(1);
    expect(runs).toBe(1);
  });

  it("a taken-over attempt's late error is not written on the row of the attempt that took it over", async () => {
    await leftPending('job-note:1:0', 'notify', 600);
    await pool.query("UPDATE effect_ledger SET attempt = 2, error = NULL WHERE effect_key = 'job-note:1:0'");
    const before = await statusOf('job-note:1:0');
    await ledger.noteError('job-note:1:0', 'attempt 1: connection reset after DATA', 1);
    expect(await statusOf('job-note:1:0')).toEqual(before);
    await ledger.noteError('job-note:1:0', 'attempt 2: connection reset after DATA', 2);
    expect(await statusOf('job-note:1:0')).toMatchObject({ error: 'attempt 2: connection reset after DATA' });
  });

  it('frees the key when the effect throws, so a later attempt may make it', async () => {
    await expect(once('job-1:2:0', () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(await statusOf('job-1:2:0')).toMatchObject({ status: 'failed' });
    expect(await once('job-1:2:0', async () => 'made')).toBe('made');
    expect(await statusOf('job-1:2:0')).toMatchObject({ status: 'done', attempt: 2 });
  });

  it('never runs again an effect an earlier attempt left pending, when the tool has no lookup', async () => {
    await leftPending('job-1:3:0', 'notify', 600);
    let runs = 0;
    const attempt = once('job-1:3:0', async () => ++runs);
    await expect(attempt).rejects.toBeInstanceOf(EffectUncertainError);
    expect(runs).toBe(0);
  });

  it('takes over a pending effect that was claimed but never started, once its grace is over', async () => {
    await leftPending('job-1:3:1', 'notify', 600, false);
    let runs = 0;
    expect(await once('job-1:3:1', async () => ++runs, {}, { pendingGraceMs: 60_000 })).toBe(1);
    expect(await statusOf('job-1:3:1')).toMatchObject({ status: 'done', attempt: 2 });
  });

  it('hashes a key too long for the column', () => {
    expect(effectKeyOf('j:1:0', 'k'.repeat(300))).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(effectKeyOf('j:1:0', 'k')).toBe('j:1:0#k');
  });
});

describe("a tool's lookup settles a pending effect", () => {
  it('records an effect the lookup found as done, with its value, and does not run it again', async () => {
    await leftPending('job-2:1:0', 'notify', 600);
    const asked: string[] = [];
    const hooks: EffectHooks = {
      pendingGraceMs: 1_000,
      lookup: async (effect) => (asked.push(effect.ref), { happened: true, value: { ticket: 'T-9' } }),
    };
    let runs = 0;
    expect(await once('job-2:1:0', async () => ++runs, {}, hooks)).toEqual({ ticket: 'T-9' });
    expect(runs).toBe(0);
    expect(asked).toEqual(['ref-job-2:1:0']);
    expect(await once('job-2:1:0', async () => ++runs, {}, hooks)).toEqual({ ticket: 'T-9' });
    expect(asked).toHaveLength(1);
  });

  it('makes the effect, once, when the lookup says it did not happen', async () => {
    await leftPending('job-2:2:0', 'notify', 600);
    const hooks: EffectHooks = { pendingGraceMs: 1_000, lookup: async () => ({ happened: false }) };
    let runs = 0;
    expect(await once('job-2:2:0', async () => ++runs, {}, hooks)).toBe(1);
    expect(await once('job-2:2:0', async () => ++runs, {}, hooks)).toBe(1);
    expect(await statusOf('job-2:2:0')).toMatchObject({ status: 'done', attempt: 2 });
  });

  it('waits while the pending row is young, then asks; a failing lookup leaves it uncertain', async () => {
    await leftPending('job-2:3:0', 'notify', 0);
    const started = Date.now();
    const hooks: EffectHooks = {
      pendingGraceMs: 1_200,
      lookup: async () => {
        throw new Error('lookup down');
      },
    };
    const attempt = once('job-2:3:0', async () => 'made', {}, hooks);
    await expect(attempt).rejects.toMatchObject({ why: 'the lookup failed (lookup down)' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(await statusOf('job-2:3:0')).toMatchObject({ status: 'uncertain' });
  });

  it('passes the ref the tool gave to its lookup', async () => {
    const refs: string[] = [];
    await once('job-2:4:0', async () => 'first', { ref: 'idem-42' });
    // Simulate the first attempt dying before its record: the row is pending again, started, old.
    await pool.query(
      "UPDATE effect_ledger SET status = 'pending', updated_at = NOW(3) - INTERVAL 10 MINUTE WHERE effect_key = ?",
      ['job-2:4:0'],
    );
    const hooks: EffectHooks = {
      pendingGraceMs: 1_000,
      lookup: async (effect) => (refs.push(effect.ref), { happened: true }),
    };
    expect(await once('job-2:4:0', async () => 'second', { ref: 'idem-42' }, hooks)).toBeNull();
    expect(refs).toEqual(['idem-42']);
  });
});

describe('per-job caps', () => {
  it('refuses an effect past maxPerJob, also when a step asks for several at once', async () => {
    const hooks: EffectHooks = { maxPerJob: 2 };
    const outcomes = await Promise.allSettled(
      [0, 1, 2, 3].map((n) => once(`job-3:1:${n}`, async () => n, {}, hooks, 'capped')),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(2);
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(refused).toHaveLength(2);
    expect(String((refused[0] as PromiseRejectedResult).reason)).toMatch(/effects of capped.*maxPerJob 2/);
    // A replay of an effect that was made is not refused by the cap; another tool has a cap of its own.
    const made = outcomes.findIndex((o) => o.status === 'fulfilled');
    expect(await once(`job-3:1:${made}`, async () => -1, {}, hooks, 'capped')).toBe(made);
    expect(await once('job-3:2:0', async () => 'other', {}, hooks, 'other_tool')).toBe('other');
  });
});

describe('per-job caps on pools that run several statements in one query', () => {
  it('hold across two ledgers claiming at once, return rows that exist, claim a failed row again, and free the lock', async () => {
    const pools = await Promise.all(
      [0, 1].map(() =>
        createStorePool(`mysql://root@127.0.0.1:3306/${database}`, { multipleStatements: true }),
      ),
    );
    try {
      const ledgers = pools.map(
        (p) => new EffectLedger(p, { multipleStatements: true, lockTimeoutSeconds: 5 }),
      );
      const claim = (n: number, via = ledgers[n % 2]!) =>
        via.claim({ effectKey: `job-m:1:${n}`, jobId: 'job-m', tool: 'capped', maxPerJob: 3, started: true });
      const first = await Promise.all([0, 1, 2, 3, 4, 5].map((n) => claim(n)));
      expect(first.filter((c) => c.kind === 'new')).toHaveLength(3);
      expect(first.filter((c) => c.kind === 'cap_reached')).toHaveLength(3);
      const made = first.findIndex((c) => c.kind === 'new');
      const row = await statusOf(`job-m:1:${made}`);
      expect(row).toMatchObject({ status: 'pending', attempt: 1 });
      expect(row?.['started_at']).toBeInstanceOf(Date);

      expect(await claim(made)).toMatchObject({ kind: 'pending' });
      await ledgers[0]!.markDone(`job-m:1:${made}`, 'made');
      expect(await claim(made, ledgers[1])).toMatchObject({ kind: 'done' });

      const other = first.findIndex((c, n) => c.kind === 'new' && n !== made);
      await ledgers[1]!.markFailed(`job-m:1:${other}`, 'not done: it certainly did not happen');
      expect(await claim(other, ledgers[0])).toEqual({ kind: 'new', attempt: 2 });

      // Every path let go of the job's lock: a claim on the one-statement pool does not wait for it.
      const started = Date.now();
      const plain = new EffectLedger(pool, { lockTimeoutSeconds: 1 });
      expect(
        await plain.claim({ effectKey: 'job-m:2:0', jobId: 'job-m', tool: 'capped', maxPerJob: 9 }),
      ).toEqual({ kind: 'new', attempt: 1 });
      expect(Date.now() - started).toBeLessThan(900);
      // The flag is what picks the batched path: on a pool that refuses several statements it cannot run, and
      // the claim is then made on its own, as after any failure of the batched query.
      const sent: string[] = [];
      const spied = new Proxy(pool, {
        get: (target, property) =>
          property === 'getConnection'
            ? async () => {
                const connection = await target.getConnection();
                const query = connection.query.bind(connection);
                connection.query = ((sql: string, values: never) => {
                  sent.push(sql);
                  return query(sql, values);
                }) as typeof connection.query;
                return connection;
              }
            : (Reflect.get(target, property) as unknown),
      });
      const misconfigured = new EffectLedger(spied, { multipleStatements: true });
      expect(
        await misconfigured.claim({ effectKey: 'job-m:3:0', jobId: 'job-m', tool: 'capped', maxPerJob: 9 }),
      ).toEqual({ kind: 'new', attempt: 1 });
      expect(sent[0]).toMatch(/START TRANSACTION/);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });
});

describe('a batched claim whose read fails after it took the lock', () => {
  it("lets go of the job's lock: the next claim of the job does not wait for it", async () => {
    const batched = await createStorePool(`mysql://root@127.0.0.1:3306/${database}`, {
      multipleStatements: true,
      connectionLimit: 1,
    });
    try {
      const failing = new EffectLedger(batched, { multipleStatements: true, lockTimeoutSeconds: 1 });
      const claim = { effectKey: 'job-r:1:0', jobId: 'job-r', tool: 'capped', maxPerJob: 3 };
      // The lock's statement runs, the read after it fails (a statement error: the session lives on).
      await pool.query('RENAME TABLE effect_ledger TO effect_ledger_away');
      try {
        await expect(failing.claim(claim)).rejects.toThrow(/effect_ledger/);
      } finally {
        await pool.query('RENAME TABLE effect_ledger_away TO effect_ledger');
      }
      const plain = new EffectLedger(pool, { lockTimeoutSeconds: 1 });
      expect(await plain.claim(claim)).toEqual({ kind: 'new', attempt: 1 });
    } finally {
      await batched.end();
    }
  });
});

describe('the effect sweeper', () => {
  const silent = { info: () => undefined, warn: () => undefined };

  it("settles a custom tool's pending effects with its lookup, and leaves young ones", async () => {
    const swept: [EffectSweepOutcome, string][] = [];
    const createTicket = defineTool({
      name: 'create_ticket',
      description: 'Opens a ticket.',
      parameters: z.object({ title: z.string() }),
      effects: {
        pendingGraceMs: 60_000,
        lookup: async (effect) =>
          effect.ref === 'ref-job-4:1:0' ? { happened: true, value: 'ticket T-1' } : { happened: false },
        onSwept: (outcome, effect) => swept.push([outcome, effect.effectKey]),
      },
      execute: async () => 'unused',
    });
    const readOnly = defineTool({
      name: 'lookup_only',
      description: 'Reads.',
      parameters: z.object({}),
      readOnly: true,
      execute: async () => 'unused',
    });
    await leftPending('job-4:1:0', 'create_ticket', 600); // it happened
    await leftPending('job-4:1:1', 'create_ticket', 600); // it did not
    await leftPending('job-4:1:2', 'create_ticket', 600, false); // never started
    await leftPending('job-4:1:3', 'create_ticket', 0); // young: maybe still running
    await leftPending('job-4:1:4', 'some_other_fleets_tool', 600); // not this fleet's

    const tools = sweptToolsOf([createTicket, readOnly]);
    expect(tools.map((t) => t.tool)).toEqual(['create_ticket']);
    const counts = await sweepUnsettledEffects({ ledger, tools, logger: silent });

    expect(counts).toEqual({ done: 1, not_done: 2, uncertain: 0 });
    expect(await statusOf('job-4:1:0')).toMatchObject({ status: 'done', result: '"ticket T-1"' });
    expect(await statusOf('job-4:1:1')).toMatchObject({ status: 'failed' });
    expect(String((await statusOf('job-4:1:2'))?.['error'])).toMatch(/^not done: .*before starting/);
    expect(await statusOf('job-4:1:3')).toMatchObject({ status: 'pending' });
    expect(await statusOf('job-4:1:4')).toMatchObject({ status: 'pending' });
    expect(swept.sort()).toEqual([
      ['done', 'job-4:1:0'],
      ['not_done', 'job-4:1:1'],
      ['not_done', 'job-4:1:2'],
    ]);
    // The resumed call then gets the recorded value, or makes the effect that did not happen.
    const hooks = createTicket.effects ?? {};
    expect(await once('job-4:1:0', async () => 'again', {}, hooks, 'create_ticket')).toBe('ticket T-1');
    expect(await once('job-4:1:1', async () => 'made now', {}, hooks, 'create_ticket')).toBe('made now');
  });

  it('backs off rows whose lookups keep failing, and bounds the time a sweep spends on lookups', async () => {
    let looked: string[] = [];
    const hanging = {
      pendingGraceMs: 0,
      // A tool whose API hangs: every lookup runs into its time limit.
      lookup: (effect: { effectKey: string }) => {
        looked.push(effect.effectKey);
        return new Promise<never>(() => {});
      },
    };
    const keys = Array.from({ length: 6 }, (_, i) => `job-9:1:${i}`);
    for (const key of keys) await leftPending(key, 'hanging_tool', 600);
    const options = {
      ledger,
      tools: [{ tool: 'hanging_tool', hooks: hanging }],
      logger: silent,
      lookupTimeoutMs: 100,
      sweepBudgetMs: 250,
      backoff: new LookupBackoff(),
    };
    // 100 ms a lookup, 250 ms a sweep: at most 3 lookups start, the other rows wait for the next sweep.
    const first = await sweepUnsettledEffects(options);
    const failed = new Set(looked);
    expect(failed.size).toBeGreaterThanOrEqual(1);
    expect(failed.size).toBeLessThanOrEqual(3);
    expect(first.uncertain).toBe(failed.size);
    // Their rows, now uncertain, are left alone while their wait lasts: the rows behind them get their turn.
    for (let sweep = 0; sweep < 6 && failed.size < keys.length; sweep++) {
      looked = [];
      await sweepUnsettledEffects(options);
      expect(looked.filter((key) => failed.has(key))).toEqual([]);
      expect(looked.length).toBeGreaterThanOrEqual(1);
      for (const key of looked) failed.add(key);
    }
    expect([...failed].sort()).toEqual(keys);
    looked = [];
    expect(await sweepUnsettledEffects(options)).toEqual({ done: 0, not_done: 0, uncertain: 0 });
    expect(looked).toEqual([]);
    for (const key of keys) expect(await statusOf(key)).toMatchObject({ status: 'uncertain' });
  });

  it('marks a started effect of a tool without a lookup uncertain, once', async () => {
    await leftPending('job-5:1:0', 'plain_tool', 600);
    const tools = [{ tool: 'plain_tool', hooks: { pendingGraceMs: 60_000 } }];
    expect((await sweepUnsettledEffects({ ledger, tools, logger: silent })).uncertain).toBe(1);
    expect((await sweepUnsettledEffects({ ledger, tools, logger: silent })).uncertain).toBe(0);
    expect(await statusOf('job-5:1:0')).toMatchObject({ status: 'uncertain' });
  });
});

describe('migration 011', () => {
  it("moves send_email's email_ledger rows into effect_ledger, so pending ones are still settled", async () => {
    const old = `af_test_effects_old_${randomBytes(4).toString('hex')}`;
    const oldPool = await createStorePool(`mysql://root@127.0.0.1:3306/${old}`);
    try {
      // The schema as it stood before 011, with rows written by a worker of that version.
      const { mkdtemp, copyFile, rm } = await import('node:fs/promises');
      const { join } = await import('node:path');
      const { tmpdir } = await import('node:os');
      const { MIGRATIONS_DIRECTORY } = await import('../../../src/store/migration-files.js');
      const before = await mkdtemp(join(tmpdir(), 'af-migrations-'));
      for (const migration of await loadMigrations()) {
        if (migration.version < 11)
          await copyFile(join(MIGRATIONS_DIRECTORY, migration.file), join(before, migration.file));
      }
      await migrate(oldPool, { directory: before });
      await rm(before, { recursive: true });
      await oldPool.query(
        `INSERT INTO email_ledger (call_key, job_id, recipient, subject, message_id, status, smtp_response, attempt,
           smtp_started_at, updated_at) VALUES
         ('old-1:1:0', 'old-1', 'ada@example.com', 'Sent', '<a@x>', 'sent', '250 OK', 1, NOW(3), NOW(3)),
         ('old-1:1:1', 'old-1', 'bob@example.com', 'Dry', '<b@x>', 'dry_run', NULL, 1, NULL, NOW(3)),
         ('old-1:1:2', 'old-1', 'cy@example.com', 'Crashed', '<c@x>', 'pending', NULL, 2, NOW(3) - INTERVAL 9 MINUTE,
           NOW(3) - INTERVAL 9 MINUTE)`,
      );
      await oldPool.query(
        "INSERT INTO effect_ledger (effect_key, job_id, tool, status) VALUES ('old-1:2:0', 'old-1', 'notify', 'pending')",
      );

      expect(await migrate(oldPool)).toContain(11);

      const emails = new SentEmails(oldPool);
      expect(
        (await emails.listForJob('old-1')).map((e) => [e.callKey, e.status, e.recipient, e.messageId]),
      ).toEqual([
        ['old-1:1:0', 'sent', 'ada@example.com', '<a@x>'],
        ['old-1:1:1', 'dry_run', 'bob@example.com', '<b@x>'],
        ['old-1:1:2', 'pending', 'cy@example.com', '<c@x>'],
      ]);
      expect(await emails.get('old-1:1:0')).toMatchObject({ smtpResponse: '250 OK', subject: 'Sent' });
      // The pending email keeps its attempt, start mark and age: the sweeper settles it with the lookup.
      const oldLedger = new EffectLedger(oldPool);
      const counts = await sweepUnsettledEffects({
        ledger: oldLedger,
        tools: [
          {
            tool: 'send_email',
            hooks: { pendingGraceMs: 60_000, lookup: async (e) => ({ happened: e.ref === '<c@x>' }) },
          },
        ],
        logger: silent,
      });
      expect(counts.done).toBe(1);
      expect(await emails.get('old-1:1:2')).toMatchObject({ status: 'sent', attempt: 2 });
      // A generic effect pending from before the upgrade counts as started: never run again.
      expect((await oldLedger.get('old-1:2:0'))?.startedAt).not.toBeNull();
      // The old table is kept as it was, no longer written.
      const [rows] = await oldPool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM email_ledger');
      expect(Number(rows[0]?.['n'])).toBe(3);
    } finally {
      await oldPool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(old)}`);
      await oldPool.end();
    }
  });
});

const silent = { info: () => undefined, warn: () => undefined };
