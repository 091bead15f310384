-- Drops the holds of a set that ran out (their request's process died before releasing them),
-- taking each amount (the member's ":<amount>" tail) off the set's sum. A few at a time.
local function sweep(set, sum, now)
  local expired = redis.call('ZRANGEBYSCORE', set, '-inf', now, 'LIMIT', 0, 64)
  for _, member in ipairs(expired) do
    redis.call('ZREM', set, member)
    redis.call('DECRBY', sum, tonumber(string.match(member, ':(%d+)$')) or 0)
  end
end
