-- Forgets what the fleet kept of a job beside BullMQ's own keys, at once (job-state.ts).
-- KEYS[1] its checkpoint, KEYS[2] its parked traces, KEYS[3] its outcome, KEYS[4] the set of jobs whose run is
-- not yet recorded in MySQL. ARGV[1] the job id.
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('SREM', KEYS[4], ARGV[1])
return 1
