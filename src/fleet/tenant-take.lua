-- Takes one of a tenant's running slots for a job, or keeps the one it holds (tenant-slots.ts); `now` comes from
-- redis-now.lua. KEYS[1] the tenant's slots (sorted set: job id -> lease expiry ms).
-- ARGV[1] the tenant's limit of running jobs, ARGV[2] the lease in ms, ARGV[3] the job id. Returns 1 taken, 0 full.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZSCORE', KEYS[1], ARGV[3])
if not held and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + 1000)
return 1
