-- KEYS: user. ARGV: quota, requests, cost (nano-dollars; absent from an earlier version: 0).
--- @include "budget"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'used_quota', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'request_count', ARGV[2])
addSpend(KEYS[1], tonumber(ARGV[3]) or 0)
return 1
