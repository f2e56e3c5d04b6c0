// A lease on one Redis key: held by one process of the fleet at a time, for a while, renewed while the holder
// works and given back when done. A holder that dies loses it when it expires. Renewing and giving back check
// the holder's token, so a lease that expired and was taken by another is never extended or freed by the first.
import { randomBytes } from 'node:crypto';
import type { RedisClient } from './redis.js';

const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`;

export class RedisLease {
  private readonly token = randomBytes(12).toString('hex');

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly ttlMs: number,
  ) {}

  async acquire(): Promise<boolean> {
    return (await this.redis.set(this.key, this.token, 'PX', this.ttlMs, 'NX')) === 'OK';
  }

  /** False when the lease is no longer ours. */
  async renew(): Promise<boolean> {
    return Number(await this.redis.eval(RENEW, 1, this.key, this.token, this.ttlMs)) === 1;
  }

  async release(): Promise<void> {
    await this.redis.eval(RELEASE, 1, this.key, this.token);
  }
}
