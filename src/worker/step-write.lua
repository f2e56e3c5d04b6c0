-- What one turn of a run hands over, in one round trip (step-writes.ts): the checkpoint, the parked trace, and on
-- the BullMQ job (while it exists) its progress event and its log line, as BullMQ's own scripts write them.
-- KEYS[1] the job's hash, KEYS[2] the queue's events stream, KEYS[3] the queue's meta hash, KEYS[4] the job's
-- logs, KEYS[5] the run's checkpoint, KEYS[6] its parked traces (hash: step -> trace).
-- ARGV[1] the job id, ARGV[2] the progress as JSON ('' none), ARGV[3] the log line ('' none), ARGV[4] how many log
-- lines to keep ('' all), ARGV[5] the checkpoint ('' none), ARGV[6] its TTL in s, ARGV[7] the trace's step ('' none),
-- ARGV[8] the trace as JSON, ARGV[9] the parked traces' TTL in s.
if ARGV[5] ~= '' then redis.call('SET', KEYS[5], ARGV[5], 'EX', ARGV[6]) end
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[6], ARGV[7], ARGV[8])
  redis.call('EXPIRE', KEYS[6], ARGV[9])
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[2] ~= '' then
    local maxEvents = redis.call('HGET', KEYS[3], 'opts.maxLenEvents')
    if not maxEvents then
      maxEvents = 10000
      redis.call('HSET', KEYS[3], 'opts.maxLenEvents', maxEvents)
    end
    redis.call('HSET', KEYS[1], 'progress', ARGV[2])
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxEvents, '*', 'event', 'progress', 'jobId', ARGV[1], 'data', ARGV[2])
  end
  if ARGV[3] ~= '' then
    redis.call('RPUSH', KEYS[4], ARGV[3])
    if ARGV[4] ~= '' then redis.call('LTRIM', KEYS[4], -tonumber(ARGV[4]), -1) end
  end
end
return 1
