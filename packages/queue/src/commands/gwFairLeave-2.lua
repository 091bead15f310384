-- A job has left the queue (a worker took it, or it was removed unrun): its tenant's line
-- shortens, and the class's virtual time moves up to its rank (fair-shares.ts).
-- KEYS: the queue's line counts, the user's per-key counts. ARGV: class, key id, the job's rank,
-- 1 when it was on the wait list.
if redis.call('HINCRBY', KEYS[2], ARGV[2], -1) <= 0 then redis.call('HDEL', KEYS[2], ARGV[2]) end
if redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':n', -1) <= 0 then
  -- Nobody waits: ranks start again from zero.
  redis.call('HDEL', KEYS[1], ARGV[1] .. ':n', ARGV[1] .. ':v', ARGV[1] .. ':w')
else
  if ARGV[4] == '1' then redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':w', -1) end
  local virtual = tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. ':v') or '0')
  if tonumber(ARGV[3]) > virtual then redis.call('HSET', KEYS[1], ARGV[1] .. ':v', ARGV[3]) end
end
return 1
