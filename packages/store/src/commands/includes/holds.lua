-- Quota holds (quota-holds.ts): a sorted set of "<id>:<amount>" scored by expiry, and the sum
-- of their amounts.
local function amountOf(member)
  return tonumber(string.match(member, ':(%d+)$')) or 0
end

-- Drops the holds of a set that ran out (their request's process died before giving them back),
-- taking each amount off the set's sum. A few at a time.
local function sweep(set, sum, now)
  local expired = redis.call('ZRANGEBYSCORE', set, '-inf', now, 'LIMIT', 0, 64)
  for _, member in ipairs(expired) do
    redis.call('ZREM', set, member)
    redis.call('DECRBY', sum, amountOf(member))
  end
end

-- Gives one hold back: 1 when it was still held (a hold given back twice counts once).
local function giveBack(set, sum, member)
  if redis.call('ZREM', set, member) == 0 then return 0 end
  redis.call('DECRBY', sum, amountOf(member))
  return 1
end

-- A set with no hold left goes, with its sum: a deleted key or user leaves nothing behind.
local function dropIfEmpty(set, sum)
  if redis.call('ZCARD', set) == 0 then redis.call('DEL', set, sum) end
end
