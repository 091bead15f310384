-- Takes a job out of the lists a worker fetches from, if it is still in one, so that exactly one
-- caller may remove it unrun: a worker can no longer take it, and a second remover (a cancel and
-- a withdrawal of the same job, say) finds it gone. BullMQ's own remove answers 1 for a job that
-- is not there at all; this does not (job-client.ts, removeIfWaiting).
-- KEYS: the queue's wait list, prioritized set, delayed set and paused list. ARGV: the job id.
-- Returns 1 when it took the job out, else 0.
if redis.call('LREM', KEYS[1], 1, ARGV[1]) > 0 then return 1 end
if redis.call('ZREM', KEYS[2], ARGV[1]) > 0 then return 1 end
if redis.call('ZREM', KEYS[3], ARGV[1]) > 0 then return 1 end
if redis.call('LREM', KEYS[4], 1, ARGV[1]) > 0 then return 1 end
return 0
