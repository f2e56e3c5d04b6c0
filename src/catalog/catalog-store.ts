// The catalog in Redis. Each worker publishes its catalog at start (the latest start's is what producers check
// tasks against) and keeps its hash alive in a sorted set, so workers serving different catalogs are noticed.
// The catalog itself lives only while a worker serving it does: its key expires three refresh periods after the
// last refresh by such a worker, and a live worker republishes its own when the latest one's workers are all
// gone, so producers never check tasks against the catalog of a fleet that no longer runs.
import type { RedisClient } from '../queue/redis.js';
import { catalogSchema, type Catalog } from './catalog.js';

/** A worker refreshes its hash this often; one not refreshed for three periods has gone. */
export const CATALOG_REFRESH_MS = 30_000;

export class CatalogStore {
  private readonly latestKey: string;
  private readonly liveKey: string;
  private readonly liveForMs: number;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    options: { refreshMs?: number } = {},
  ) {
    this.latestKey = `${prefix}:catalog`;
    this.liveKey = `${prefix}:catalogs`;
    this.liveForMs = 3 * (options.refreshMs ?? CATALOG_REFRESH_MS);
  }

  async publish(catalog: Catalog): Promise<void> {
    await this.redis
      .multi()
      .set(this.latestKey, JSON.stringify(catalog), 'PX', this.liveForMs)
      .zadd(this.liveKey, Date.now(), catalog.hash)
      .pexpire(this.liveKey, this.liveForMs)
      .exec();
  }

  /**
   * Marks this worker's catalog alive; returns the hashes live workers serve (this one included). The latest
   * catalog's key lives on while this worker serves it; when it is missing or its workers are all gone, this
   * worker's own catalog becomes the latest.
   */
  async refresh(catalog: Catalog, now = Date.now()): Promise<string[]> {
    const replies = await this.redis
      .multi()
      .zadd(this.liveKey, now, catalog.hash)
      .zremrangebyscore(this.liveKey, 0, now - this.liveForMs)
      .pexpire(this.liveKey, this.liveForMs)
      .zrange(this.liveKey, 0, -1)
      .get(this.latestKey)
      .exec();
    const reply = replies?.[3]?.[1];
    const live = Array.isArray(reply) ? reply.map(String) : [catalog.hash];
    const latestHash = hashOf(replies?.[4]?.[1]);
    if (latestHash === catalog.hash) {
      await this.redis.pexpire(this.latestKey, this.liveForMs);
    } else if (latestHash === null || !live.includes(latestHash)) {
      await this.redis.set(this.latestKey, JSON.stringify(catalog), 'PX', this.liveForMs);
    }
    return live;
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

/** The hash of a stored catalog's text, without checking the rest. */
function hashOf(text: unknown): string | null {
  if (typeof text !== 'string') return null;
  try {
    const hash: unknown = (JSON.parse(text) as { hash?: unknown }).hash;
    return typeof hash === 'string' ? hash : null;
  } catch {
    return null;
  }
}
