// What the fleet keeps in Redis for a job besides BullMQ's own keys: its checkpoint, its parked traces and a kept
// outcome (with its entry in the set of unrecorded jobs). All of it goes in one command, when a job starts for
// the first time (an earlier job of the same id may have left some) and once its result is out: one round trip
// a job instead of one per store, and one per trace written (parked traces stay until the result is out; a
// retry that finds them writes them again, an upsert).
import type { RedisClient } from '../queue/redis.js';
import { LuaScript } from '../fleet/lua-script.js';
import { checkpointKey } from './checkpoint-store.js';
import { outcomeKey, unrecordedKey } from './outcome-store.js';
import { parkedTracesKey } from './trace-writer.js';

// KEYS: checkpoint, parked traces, kept outcome, the unrecorded set. ARGV: the job id.
const FORGET = LuaScript.fromFiles(new URL('./job-forget.lua', import.meta.url));

export async function forgetJobState(redis: RedisClient, prefix: string, jobId: string): Promise<void> {
  const keys = [
    checkpointKey(prefix, jobId),
    parkedTracesKey(prefix, jobId),
    outcomeKey(prefix, jobId),
    unrecordedKey(prefix),
  ];
  await FORGET.run(redis, keys, [jobId]);
}
