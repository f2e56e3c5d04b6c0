// The ledger behind ctx.once on MariaDB: a recorded effect returns its value instead of running again, a
// throwing effect frees its key, a pending one (an attempt that stopped before recording) is never run again.
import { randomBytes } from 'node:crypto';
import type { Pool } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../src/store/pool.js';
import { EffectLedger, effectKeyOf, EffectUncertainError } from '../src/tools/effect-ledger.js';

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

const claim = (callKey: string, key?: string) => ({
  callKey,
  jobId: 'job-1',
  tool: 'notify',
  ...(key ? { key } : {}),
});

describe('EffectLedger.once', () => {
  it('runs an effect once and gives its recorded value to every later call', async () => {
    let runs = 0;
    const effect = async () => ({ ticket: ++runs });
    expect(await ledger.once(claim('job-1:1:0'), effect)).toEqual({ ticket: 1 });
    expect(await ledger.once(claim('job-1:1:0'), effect)).toEqual({ ticket: 1 });
    // Another key of the same call is another effect.
    expect(await ledger.once(claim('job-1:1:0', 'second'), effect)).toEqual({ ticket: 2 });
    expect(runs).toBe(2);
  });

  it('frees the key when the effect throws, so a later attempt may make it', async () => {
    await expect(ledger.once(claim('job-1:2:0'), () => Promise.reject(new Error('refused')))).rejects.toThrow(
      'refused',
    );
    expect(await ledger.once(claim('job-1:2:0'), async () => 'made')).toBe('made');
  });

  it('never runs again an effect an earlier attempt left pending', async () => {
    await pool.query(
      "INSERT INTO effect_ledger (effect_key, job_id, tool, status) VALUES ('job-1:3:0', 'job-1', 'notify', 'pending')",
    );
    let runs = 0;
    const attempt = ledger.once(claim('job-1:3:0'), async () => ++runs);
    await expect(attempt).rejects.toBeInstanceOf(EffectUncertainError);
    expect(runs).toBe(0);
  });

  it('hashes a key too long for the column', () => {
    expect(effectKeyOf('j:1:0', 'k'.repeat(300))).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(effectKeyOf('j:1:0', 'k')).toBe('j:1:0#k');
  });
});
