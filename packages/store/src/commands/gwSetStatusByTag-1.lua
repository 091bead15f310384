-- KEYS: a tag's set of channel ids. ARGV: the channel key prefix, status, status reason.
-- Returns how many channels changed.
local ids = redis.call('SMEMBERS', KEYS[1])
local count = 0
for _, id in ipairs(ids) do
  local key = ARGV[1] .. id
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, 'status', ARGV[2], 'status_reason', ARGV[3])
    count = count + 1
  end
end
return count
