// `npm run schedules -- list | sync | remove NAME`: the fleet's registered schedules.
//   list    one JSON line per schedule: name, cron, time zone, next run
//   sync    register SCHEDULES_FILE's schedules now (workers do it at start), remove the ones gone from it
//   remove  unregister one schedule now (it comes back at the next sync if the file still has it)
import { Queue } from 'bullmq';
import { env, redisTargetOf } from '../config/env.js';
import { scrubText } from '../src/logging/redact.js';
import { assertRedisReachable, createRedis } from '../src/queue/redis.js';
import { SCHEDULES_QUEUE } from '../src/queue/names.js';
import { loadSchedules } from '../src/schedules/schedule-config.js';
import { syncSchedules } from '../src/schedules/sync-schedules.js';

const USAGE = 'usage: npm run schedules -- list | sync | remove NAME';

async function main(argv: string[]): Promise<number> {
  const [command, name] = argv;
  if (!command || !['list', 'sync', 'remove'].includes(command) || (command === 'remove' && !name)) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = env();
  const connection = createRedis(redisTargetOf(config), 'producer');
  connection.on('error', () => undefined);
  const queue = new Queue(SCHEDULES_QUEUE, { connection, prefix: config.QUEUE_PREFIX });
  queue.on('error', () => undefined);
  try {
    await assertRedisReachable(connection, redisTargetOf(config));
    if (command === 'sync') {
      process.stdout.write(
        `${JSON.stringify(await syncSchedules(queue, await loadSchedules(config.SCHEDULES_FILE)))}\n`,
      );
    } else if (command === 'remove') {
      const removed = await queue.removeJobScheduler(name!);
      process.stdout.write(`${JSON.stringify({ removed: removed ? [name] : [] })}\n`);
      if (!removed) {
        process.stderr.write(`no schedule named ${name}\n`);
        return 1;
      }
    } else {
      for (const scheduler of await queue.getJobSchedulers(0, -1, true)) {
        const next = scheduler.next ? new Date(scheduler.next).toISOString() : null;
        process.stdout.write(
          `${JSON.stringify({ name: scheduler.key, cron: scheduler.pattern, timezone: scheduler.tz ?? 'UTC', next })}\n`,
        );
      }
    }
    return 0;
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`schedules: ${scrubText(error instanceof Error ? error.message : String(error))}\n`);
    process.exit(1);
  },
);
