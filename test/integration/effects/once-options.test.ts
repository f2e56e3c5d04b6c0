// The options of ctx.once that send_email runs on, against a real MariaDB ledger: a lease taken before the
// claim (a wait for it records nothing; the claim is started with it in one write; it is given back when the
// claim is not new), a start marked just before the effect, and leavePending for an outcome nothing can tell.
import { randomBytes } from 'node:crypto';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { EffectLedger } from '../../../src/effects/effect-ledger.js';
import { EffectUncertainError, runOnce, type OnceCall } from '../../../src/effects/effect-once.js';
import type { OnceLease } from '../../../src/kernel/tool.js';

const database = `af_test_once_${randomBytes(4).toString('hex')}`;
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

const call = (callKey: string): OnceCall => ({
  callKey,
  jobId: callKey.split(':')[0]!,
  tool: 'notify',
  signal: new AbortController().signal,
});

async function rowOf(effectKey: string): Promise<RowDataPacket | undefined> {
  const [rows] = await pool.query<RowDataPacket[]>('SELECT * FROM effect_ledger WHERE effect_key = ?', [
    effectKey,
  ]);
  return rows[0];
}

/** A resource whose lease is held back until `give()`: a queue of connections, all busy. */
function heldResource() {
  let give: (() => void) | undefined;
  const free = new Promise<void>((resolve) => (give = resolve));
  const lease: OnceLease & { released: number } = {
    released: 0,
    release() {
      this.released++;
    },
  };
  let asked = false;
  return {
    lease,
    give: () => give?.(),
    get asked() {
      return asked;
    },
    acquire: async () => {
      asked = true;
      await free;
      return lease;
    },
  };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}

describe('a lease taken before the claim', () => {
  it('records nothing while the lease is awaited, then claims the row started with it, in one write', async () => {
    const key = 'job-lease:1:0';
    const resource = heldResource();
    let startedAtEffect: unknown;
    const made = runOnce(
      ledger,
      call(key),
      async (attempt) => {
        startedAtEffect = (await rowOf(key))?.['started_at'];
        expect(attempt.lease).toBe(resource.lease);
        return 'made';
      },
      { acquire: resource.acquire, startWithClaim: false },
      // A grace shorter than the wait: a started mark during the wait would let another attempt ask the lookup.
      { pendingGraceMs: 10 },
    );
    await until(() => resource.asked);
    await new Promise((r) => setTimeout(r, 100));
    // Waiting for the lease, past the grace: no row, so nobody can take the wait for a stopped effect.
    expect(await rowOf(key)).toBeUndefined();
    resource.give();
    expect(await made).toBe('made');
    expect(startedAtEffect).toBeInstanceOf(Date);
    expect(await rowOf(key)).toMatchObject({ status: 'done', attempt: 1 });
    expect(resource.lease.released).toBe(1);
  });

  it('gives the lease back, and makes nothing, when the claim finds the effect already made', async () => {
    const key = 'job-lease:1:1';
    await runOnce(ledger, call(key), async () => 'first');
    const resource = heldResource();
    resource.give();
    let runs = 0;
    const again = await runOnce(ledger, call(key), async () => (runs++, 'second'), {
      acquire: resource.acquire,
    });
    expect(again).toBe('first');
    expect(runs).toBe(0);
    expect(resource.lease.released).toBe(1);
  });
});

describe('a claim not started with the claim', () => {
  it('is marked started by the effect just before it acts; a taken-over attempt learns it may not', async () => {
    const key = 'job-start:1:0';
    const made = await runOnce(
      ledger,
      call(key),
      async (attempt) => {
        expect((await rowOf(key))?.['started_at']).toBeNull();
        expect(await attempt.start()).toBe(true);
        expect((await rowOf(key))?.['started_at']).toBeInstanceOf(Date);
        return 'made';
      },
      { startWithClaim: false },
    );
    expect(made).toBe('made');

    const taken = 'job-start:1:1';
    const outcome = await runOnce(
      ledger,
      call(taken),
      async (attempt) => {
        // Another attempt found the row stale and took it over before this one started.
        await ledger.release(taken, attempt.attempt, 'not done: taken over', { unstartedOnly: true });
        await ledger.claim({ effectKey: taken, jobId: 'job-start', tool: 'notify' });
        return (await attempt.start()) ? 'made' : 'not mine';
      },
      { startWithClaim: false },
    );
    expect(outcome).toBe('not mine');
    // Nothing recorded over the newer attempt's claim.
    expect(await rowOf(taken)).toMatchObject({ status: 'pending', attempt: 2, result: null });
  });
});

describe('leavePending: an outcome nothing can tell', () => {
  it('leaves the row pending and started with its note, records nothing, and a later attempt does not make it again', async () => {
    const key = 'job-unknown:1:0';
    let runs = 0;
    const said = await runOnce(ledger, call(key), async (attempt) => {
      runs++;
      await attempt.leavePending('the connection dropped after the final dot');
      return 'delivery uncertain';
    });
    expect(said).toBe('delivery uncertain');
    expect(await rowOf(key)).toMatchObject({
      status: 'pending',
      result: null,
      error: 'the connection dropped after the final dot',
      attempt: 1,
    });
    expect((await rowOf(key))?.['started_at']).toBeInstanceOf(Date);
    // Without a lookup the next attempt reports it, never runs it again.
    await expect(runOnce(ledger, call(key), async () => (runs++, 'again'))).rejects.toBeInstanceOf(
      EffectUncertainError,
    );
    // With one, past the grace, it asks rather than making it.
    let asked = 0;
    const settled = await runOnce(
      ledger,
      call(key),
      async () => (runs++, 'again'),
      {},
      {
        pendingGraceMs: 1,
        lookup: async () => (asked++, { happened: true, value: 'it arrived' }),
      },
    );
    expect(settled).toBe('it arrived');
    expect(asked).toBe(1);
    expect(runs).toBe(1);
  });
});
