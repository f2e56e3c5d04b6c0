-- A grant's actual tokens once its call answered (token-rate-limiter.ts); `now` comes from redis-now.lua.
-- KEYS[1] the window's log, KEYS[2] the grants' amounts (as token-grant.lua). ARGV[1] the grant id, ARGV[2] its
-- actual tokens, ARGV[3] the window in ms (the grant now expires a window from now). A grant gone stays gone.
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
end
return 1
