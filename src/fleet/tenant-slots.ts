// Per-tenant concurrency (TENANT_CONCURRENCY), shared by every worker through Redis: how many jobs of one tenant
// run at once. A slot is a lease: a sorted set per tenant holds the job ids running now, scored by when their
// lease expires. A job takes a slot before its run starts (one Lua script: sweep expired leases, then take a
// slot if fewer than the limit are held, or keep the one it already holds), renews it while it runs, and gives
// it back when the run ends, however it ends. A worker killed while holding a slot never gives it back: its
// lease expires (by default with the job's lock, WORKER_LOCK_DURATION_MS), and the slot is free again, by the
// time BullMQ hands the stalled job to another worker, which takes a slot of its own the same way.
// A job that finds its tenant at the limit does not wait in the worker: the processor moves it back to
// `delayed` with a short backoff, so it holds no worker slot and other tenants' jobs run meanwhile.
// Times are the Redis server's clock.
import type { RedisClient } from '../queue/redis.js';
import { TENANT_NAME } from '../queue/tenant-name.js';
import { LuaScript } from './lua-script.js';

export const DEFAULT_TENANT_LEASE_MS = 60_000;
/** Waits of a job whose tenant is at its limit: base · 2^(n−1), capped, with jitter. */
export const TENANT_WAIT_BASE_MS = 250;
export const TENANT_WAIT_MAX_MS = 2_000;

// KEYS: the tenant's leases. ARGV: limit, lease ms, job id. Reply: 1 taken (or renewed) | 0 at the limit.
const TAKE = LuaScript.fromFiles(
  new URL('./redis-now.lua', import.meta.url),
  new URL('./tenant-take.lua', import.meta.url),
);

// KEYS: the tenant's leases. ARGV: lease ms, job id. Renews a lease still held; 0 when it was lost.
const RENEW = LuaScript.fromFiles(
  new URL('./redis-now.lua', import.meta.url),
  new URL('./tenant-renew.lua', import.meta.url),
);

export interface TenantSlotsOptions {
  redis: RedisClient;
  prefix?: string;
  /** Jobs of one tenant running at once (TENANT_CONCURRENCY). */
  limit: number;
  /** How long a slot outlives its last renewal (a killed worker's slot is free again after this). */
  leaseMs?: number;
}

/** A slot held by a running job: renewed until released. */
export interface HeldSlot {
  release(): Promise<void>;
}

export class TenantSlots {
  readonly limit: number;
  readonly leaseMs: number;
  private readonly redis: RedisClient;
  private readonly prefix: string;

  constructor(options: TenantSlotsOptions) {
    if (!Number.isInteger(options.limit) || options.limit < 1)
      throw new RangeError('limit must be an integer >= 1');
    this.limit = options.limit;
    this.leaseMs = options.leaseMs ?? DEFAULT_TENANT_LEASE_MS;
    if (!Number.isInteger(this.leaseMs) || this.leaseMs < 100) throw new RangeError('leaseMs must be >= 100');
    this.redis = options.redis;
    this.prefix = options.prefix ?? 'agentfleet';
  }

  /**
   * Takes a slot of `tenant` for `jobId` (or keeps the one it holds): the slot, renewed every third of the
   * lease until released, or null when the tenant is at its limit.
   */
  async take(tenant: string, jobId: string, onLost?: (error: unknown) => void): Promise<HeldSlot | null> {
    const key = this.key(tenant);
    const taken = await TAKE.run(this.redis, [key], [this.limit, this.leaseMs, jobId]);
    if (taken !== 1) return null;
    const timer = setInterval(
      () => {
        RENEW.run(this.redis, [key], [this.leaseMs, jobId]).then(
          (held) => {
            if (held !== 1) onLost?.(new Error(`the slot of tenant ${tenant} expired before its renewal`));
          },
          (error: unknown) => onLost?.(error),
        );
      },
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    timer.unref();
    let released: Promise<void> | undefined;
    return {
      release: () => {
        clearInterval(timer);
        released ??= this.redis.zrem(key, jobId).then(() => undefined);
        return released;
      },
    };
  }

  /** The jobs holding a slot of `tenant` now (expired leases left out). */
  async holders(tenant: string): Promise<string[]> {
    const [seconds, micros] = await this.redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    return this.redis.zrangebyscore(this.key(tenant), now, '+inf');
  }

  /** The Redis key of a tenant's slots (for operators and tests). */
  key(tenant: string): string {
    if (!TENANT_NAME.test(tenant)) throw new RangeError(`bad tenant ${JSON.stringify(tenant)}`);
    return `${this.prefix}:tenant-slots:${tenant}`;
  }
}

/** How long the n-th wait (1, 2, …) of a job whose tenant is at its limit lasts. */
export function tenantWaitMs(n: number, random: () => number = Math.random): number {
  const base = Math.min(TENANT_WAIT_MAX_MS, TENANT_WAIT_BASE_MS * 2 ** Math.max(0, Math.min(n - 1, 10)));
  return Math.round(base * (0.75 + random() / 2));
}
