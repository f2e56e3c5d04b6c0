-- `now`: the Redis server's clock in ms, one clock for the whole fleet. Put before the scripts that use it; it reads
-- no KEYS or ARGV of its own.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
