-- KEYS: the channel's lease set. ARGV: ttl ms, lease ids. Returns the ids that were gone already.
--- @include "now"
local expiry = now + tonumber(ARGV[1])
local lost = {}
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], expiry, ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
if #lost < #ARGV - 1 then redis.call('PEXPIREAT', KEYS[1], expiry) end
return lost
