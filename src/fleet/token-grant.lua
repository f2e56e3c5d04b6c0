-- One try for a share of the fleet's tokens-per-window budget (token-rate-limiter.ts); `now` from redis-now.lua.
-- KEYS[1] the window's log (sorted set: grant id -> expiry ms), KEYS[2] the grants' amounts (hash: grant id ->
-- tokens), KEYS[3] the fleet's pause key. ARGV[1] the limit of tokens in a window, ARGV[2] the window in ms,
-- ARGV[3] this grant's id, ARGV[4] its tokens, ARGV[5] the longest a call may take, in ms (a grant lives for the
-- window after it). Returns {1}, or {0, ms to wait[, 1 when paused]}.
local paused = redis.call('PTTL', KEYS[3])
if paused > 0 then return {0, paused, 1} end
local limit, window, tokens = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #gone > 0 then
  for _, id in ipairs(gone) do redis.call('HDEL', KEYS[2], id) end
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
end
local used = 0
for _, v in ipairs(redis.call('HVALS', KEYS[2])) do used = used + tonumber(v) end
if used + tokens <= limit then
  local ttl = window + tonumber(ARGV[5])
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ttl + 1000)
  redis.call('PEXPIRE', KEYS[2], ttl + 1000)
  return {1}
end
local entries = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local freed = 0
for i = 1, #entries, 2 do
  freed = freed + tonumber(redis.call('HGET', KEYS[2], entries[i]) or '0')
  if used - freed + tokens <= limit then
    local wait = tonumber(entries[i + 1]) - now
    if wait < 1 then wait = 1 end
    return {0, wait}
  end
end
return {0, window}
