-- KEYS: the channel's lease set. ARGV: limit, ttl ms, how many, lease id prefix, first number.
-- Takes up to "how many" leases, ids prefix..number. Returns {taken, free left, ms until the
-- first lease expires when none was free}.
--- @include "now"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
local limit = tonumber(ARGV[1])
local taken = math.min(tonumber(ARGV[3]), limit - held)
if taken > 0 then
  local expiry = now + tonumber(ARGV[2])
  local first = tonumber(ARGV[5])
  for i = 0, taken - 1 do
    redis.call('ZADD', KEYS[1], expiry, ARGV[4] .. (first + i))
  end
  redis.call('PEXPIREAT', KEYS[1], expiry)
  return {taken, limit - held - taken, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = 0
if oldest[2] then wait = tonumber(oldest[2]) - now end
return {0, 0, wait}
