-- Extends a job's lease on its tenant's slot while it runs (tenant-slots.ts); `now` comes from redis-now.lua.
-- KEYS[1] the tenant's slots (sorted set: job id -> lease expiry ms). ARGV[1] the lease in ms, ARGV[2] the job id.
-- Returns 1, or 0 when the job holds no slot (its lease ran out).
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) + 1000)
return 1
