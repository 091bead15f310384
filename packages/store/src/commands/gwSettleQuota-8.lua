-- A request with a hold ends (quota-holds.ts): its usage is charged to its key and user and its
-- hold given back in one step, so at no moment is it neither held nor charged. Only a hold still
-- held is charged: a job run again (its worker died after settling) is not charged twice.
-- KEYS: token record, user record, then for the token and for the user: holds, held sum, held cost.
-- ARGV: the hold, the quota used, requests answered (0 or 1), now (s), the cost (nano-dollars).
--- @include "holds"
--- @include "budget"
if giveBack(KEYS[3], KEYS[4], KEYS[5], ARGV[1]) == 0 then return 0 end
giveBack(KEYS[6], KEYS[7], KEYS[8], ARGV[1])
dropIfEmpty(KEYS[3], KEYS[4], KEYS[5])
dropIfEmpty(KEYS[6], KEYS[7], KEYS[8])
local quota = tonumber(ARGV[2])
local cost = tonumber(ARGV[5]) or 0
if tonumber(ARGV[3]) == 0 then return 1 end
local token, user = redis.call('EXISTS', KEYS[1]) == 1, redis.call('EXISTS', KEYS[2]) == 1
if token then
  if redis.call('HGET', KEYS[1], 'unlimited_quota') ~= '1' then redis.call('HINCRBY', KEYS[1], 'remain_quota', -quota) end
  redis.call('HINCRBY', KEYS[1], 'used_quota', quota)
  redis.call('HSET', KEYS[1], 'accessed_time', ARGV[4])
end
if user then
  redis.call('HINCRBY', KEYS[2], 'used_quota', quota)
  redis.call('HINCRBY', KEYS[2], 'request_count', ARGV[3])
end
-- Money last: quota is charged whatever becomes of it.
if token then addSpend(KEYS[1], cost) end
if user then addSpend(KEYS[2], cost) end
return 1
