// Which Redis server a connection talks to, by the server's run id (INFO server), so a caller learns when a
// reconnection landed on another server: a Sentinel failover's new master, or a server restarted empty. Writes
// the old server acknowledged just before may not be on the new one (replication is asynchronous); see
// ResultPublisher.publishAgainIfLost. A cluster's connection spans many servers and is not watched.
import { Cluster } from 'ioredis';
import type { RedisClient } from './redis.js';

const RUN_ID = /^run_id:([0-9a-f]+)/m;

/**
 * Calls `onChange` each time the connection is ready on a server other than the one it was ready on before.
 * Returns a function that stops watching. The first server is learned from the first `ready`, or at once when
 * the connection is ready already.
 */
export function watchServerChange(
  connection: RedisClient,
  onChange: () => void,
  onError: (error: unknown) => void = () => undefined,
): () => void {
  if (connection instanceof Cluster) return () => undefined;
  const redis = connection;
  let known: string | undefined;
  const learn = () => {
    void redis
      .info('server')
      .then((info) => {
        const runId = RUN_ID.exec(info)?.[1];
        if (runId === undefined) return;
        const changed = known !== undefined && known !== runId;
        known = runId;
        if (changed) onChange();
      })
      .catch(onError);
  };
  redis.on('ready', learn);
  if (redis.status === 'ready') learn();
  return () => redis.off('ready', learn);
}
