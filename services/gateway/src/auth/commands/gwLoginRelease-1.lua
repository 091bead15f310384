-- KEYS: the client address's failed sign-ins (see gwLoginAttempt). ARGV: the name's field, and
-- 'clear' (a right password: the name's failures from this address are forgotten) or 'undo'
-- (an attempt refused after it was counted: only it is taken back). The address keeps the
-- failures it had; this attempt leaves its total.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local total = tonumber(redis.call('HGET', KEYS[1], '#') or '0')
if total > 0 then redis.call('HINCRBY', KEYS[1], '#', -1) end
local mine = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if ARGV[2] == 'clear' or mine <= 1 then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
end
return 1
