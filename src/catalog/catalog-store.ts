// The catalog in Redis. Each worker publishes its catalog at start (the latest start's is what producers check
// tasks against) and keeps its hash alive in a sorted set, so workers serving different catalogs are noticed.
import type { Redis } from 'ioredis';
import { catalogSchema, type Catalog } from './catalog.js';

/** A worker refreshes its hash this often; one not refreshed for three periods has gone. */
export const CATALOG_REFRESH_MS = 30_000;
const LIVE_FOR_MS = 3 * CATALOG_REFRESH_MS;

export class CatalogStore {
  private readonly latestKey: string;
  private readonly liveKey: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.latestKey = `${prefix}:catalog`;
    this.liveKey = `${prefix}:catalogs`;
  }

  async publish(catalog: Catalog): Promise<void> {
    await this.redis
      .multi()
      .set(this.latestKey, JSON.stringify(catalog))
      .zadd(this.liveKey, Date.now(), catalog.hash)
      .exec();
  }

  /** Marks this hash alive; returns the hashes live workers serve (this one included). */
  async refresh(hash: string, now = Date.now()): Promise<string[]> {
    const replies = await this.redis
      .multi()
      .zadd(this.liveKey, now, hash)
      .zremrangebyscore(this.liveKey, 0, now - LIVE_FOR_MS)
      .zrange(this.liveKey, 0, -1)
      .exec();
    const live = replies?.[2]?.[1];
    return Array.isArray(live) ? live.map(String) : [hash];
  }

  /** The latest published catalog; null when none is (or it cannot be read as one). */
  async latest(): Promise<Catalog | null> {
    const text = await this.redis.get(this.latestKey);
    if (text === null) return null;
    try {
      const parsed = catalogSchema.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  }
}
