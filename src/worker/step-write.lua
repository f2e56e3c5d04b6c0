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
