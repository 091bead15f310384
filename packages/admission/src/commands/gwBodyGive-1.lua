-- KEYS: the user's body bytes (see gwBodyTake). ARGV: the holder, the bytes it gives back.
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -tonumber(ARGV[2]))
if left <= 0 then redis.call('HDEL', KEYS[1], ARGV[1], ARGV[1] .. ':t') end
return left
