-- KEYS: the channel's lease set. ARGV: limit, ttl ms, how many, lease id prefix, first number,
-- channel id, notification channel ('' for none).
-- Takes up to "how many" leases, ids prefix..number. Returns {taken, free left, ms until the
-- first lease expires when none was free}. When it takes fewer than asked, announces that the
-- asking process has requests waiting ("channel id prefix"), so that a process which hands its
-- leases to its own waiters gives them back instead while another waits too.
--- @include "now"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
local limit = tonumber(ARGV[1])
local taken = math.max(0, math.min(tonumber(ARGV[3]), limit - held))
if taken < tonumber(ARGV[3]) and ARGV[7] ~= '' then
  redis.call('PUBLISH', ARGV[7], ARGV[6] .. ' ' .. ARGV[4])
end
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
