// The catalog in Redis lives only while a worker serving it does (real Redis, a prefix of its own): it expires
// once nobody refreshes it, a refreshing worker keeps it, and a live worker replaces the latest catalog when
// the workers that published it are all gone.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Catalog } from '../../../src/catalog/catalog.js';
import { CatalogStore } from '../../../src/catalog/catalog-store.js';
import { createRedis } from '../../../src/queue/redis.js';

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const REFRESH_MS = 400; // the catalog lives three periods without a refresh: 1.2 s
let redis: Redis;

beforeAll(() => {
  redis = createRedis(REDIS_URL, 'producer');
});

afterAll(async () => {
  const keys = await redis.keys('af-test-catalog-*');
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

const prefix = () => `af-test-catalog-${randomBytes(4).toString('hex')}`;
const catalogOf = (name: string): Catalog => ({
  hash: name.repeat(64).slice(0, 64),
  agents: [
    {
      name,
      description: `agent ${name}`,
      tools: [],
      input: null,
      output: null,
      model: null,
      protocol: null,
      budget: {},
      budgetCeiling: {},
    },
  ],
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the catalog in Redis', () => {
  it('expires when no worker serving it refreshes it any more', async () => {
    const store = new CatalogStore(redis, prefix(), { refreshMs: REFRESH_MS });
    await store.publish(catalogOf('a'));
    expect((await store.latest())?.hash).toBe(catalogOf('a').hash);
    await sleep(1_800);
    expect(await store.latest()).toBeNull();
  });

  it('lives on while a worker serving it refreshes it', async () => {
    const store = new CatalogStore(redis, prefix(), { refreshMs: REFRESH_MS });
    await store.publish(catalogOf('a'));
    for (let i = 0; i < 6; i++) {
      await sleep(REFRESH_MS);
      await store.refresh(catalogOf('a'));
    }
    expect((await store.latest())?.hash).toBe(catalogOf('a').hash);
  });

  it("is replaced by a live worker's catalog when the workers of the latest are all gone", async () => {
    const shared = prefix();
    const a = new CatalogStore(redis, shared, { refreshMs: REFRESH_MS });
    const b = new CatalogStore(redis, shared, { refreshMs: REFRESH_MS });
    await a.publish(catalogOf('a'));
    await b.publish(catalogOf('b')); // started last: producers check against b
    expect(await a.refresh(catalogOf('a'))).toEqual(expect.arrayContaining([catalogOf('b').hash]));
    expect((await a.latest())?.hash).toBe(catalogOf('b').hash);
    // b's worker is gone; a's keeps refreshing, and republishes its own once b's hash is no longer live.
    for (let i = 0; i < 5; i++) {
      await sleep(REFRESH_MS);
      await a.refresh(catalogOf('a'));
    }
    expect(await a.refresh(catalogOf('a'))).toEqual([catalogOf('a').hash]);
    expect((await a.latest())?.hash).toBe(catalogOf('a').hash);
  });
});
