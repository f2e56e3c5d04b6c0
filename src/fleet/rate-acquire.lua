-- One try for a request slot of the fleet's sliding window (rate-limiter.ts); `now` comes from redis-now.lua.
-- KEYS[1] the window's log (sorted set: grant id -> granted at ms), KEYS[2] the fleet's pause key.
-- ARGV[1] the limit of requests in a window, ARGV[2] the window in ms, ARGV[3] this grant's id.
-- Returns {1, granted at ms}, or {0, ms to wait, 1 when paused else 0}.
local paused = redis.call('PTTL', KEYS[2])
if paused > 0 then return {0, paused, 1} end
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window + 1000)
  return {1, now}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = tonumber(oldest[2]) + window - now
if wait < 1 then wait = 1 end
return {0, wait, 0}
