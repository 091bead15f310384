-- One script per record, so each touches the keys of one record only. Records that vanished
-- meanwhile are not recreated as fragments.
-- KEYS: token. ARGV: quota, now (s), cost (nano-dollars; absent from an earlier version: 0).
--- @include "budget"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HGET', KEYS[1], 'unlimited_quota') ~= '1' then
  redis.call('HINCRBY', KEYS[1], 'remain_quota', -tonumber(ARGV[1]))
end
redis.call('HINCRBY', KEYS[1], 'used_quota', ARGV[1])
redis.call('HSET', KEYS[1], 'accessed_time', ARGV[2])
addSpend(KEYS[1], tonumber(ARGV[3]) or 0)
return 1
