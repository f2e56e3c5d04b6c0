-- Pauses the fleet's model calls (rate-limiter.ts) for at least ARGV[1] ms; a longer pause already set stays.
-- KEYS[1] the fleet's pause key. Returns the pause left, in ms.
local left = redis.call('PTTL', KEYS[1])
if left < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end
return redis.call('PTTL', KEYS[1])
